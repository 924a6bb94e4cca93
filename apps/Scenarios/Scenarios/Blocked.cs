using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `blocked`: a target for `clrprof dump`, with one named thread blocked in each of the
/// common ways, each started from a NoInlining method of this class:
/// blk-holder takes a lock and sleeps holding it (Thread.Sleep);
/// blk-lock waits to enter that lock (Monitor.Enter);
/// blk-sleep sleeps in a loop (Thread.Sleep);
/// blk-join joins blk-holder, which never ends (Thread.Join);
/// blk-spin runs a CPU loop (Blocked.Spin).
/// Prints one RESULT line naming, per thread, the method it is blocked in (or runs), then
/// <c>READY &lt;pid&gt;</c>, and waits for end of file on stdin.
/// </summary>
public static class Blocked
{
    private static readonly object s_lock = new();
    private static long s_sink;
    private static int s_holderLine;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        using var held = new ManualResetEventSlim(false);
        var holder = new Thread(() => Holder(held)) { Name = "blk-holder", IsBackground = true };
        holder.Start();
        held.Wait();
        Start("blk-lock", LockWaiter);
        Start("blk-sleep", Sleeper);
        Start("blk-join", () => Joiner(holder));
        Start("blk-spin", Spinner);
        // Let every thread reach the call it blocks in.
        Thread.Sleep(200);
        Results.Print(
            ("blk-holder", "System.Threading.Thread.Sleep"),
            ("blk-lock", "System.Threading.Monitor.Enter"),
            ("blk-sleep", "System.Threading.Thread.Sleep"),
            ("blk-join", "System.Threading.Thread.Join"),
            ("blk-spin", "Scenarios.Blocked.Spin"),
            ("holder_line", s_holderLine));
        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        while (Console.In.ReadLine() is not null)
        {
        }
        return 0;
    }

    private static void Start(string name, ThreadStart body) =>
        new Thread(body) { Name = name, IsBackground = true }.Start();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Holder(ManualResetEventSlim held)
    {
        Monitor.Enter(s_lock);
        // On one line: the line the runtime's own stack trace gives (from the PDB) is the
        // line of the Sleep call, which `dump` must show for this frame.
        s_holderLine = new StackFrame(0, true).GetFileLineNumber(); held.Set(); Thread.Sleep(Timeout.Infinite);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void LockWaiter()
    {
        Monitor.Enter(s_lock);
        Monitor.Exit(s_lock);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Sleeper()
    {
        while (true)
        {
            Thread.Sleep(100);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Joiner(Thread holder) => holder.Join();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Spinner()
    {
        ulong x = 1;
        while (true)
        {
            x = Spin(x);
            Interlocked.Exchange(ref s_sink, (long)x);
        }
    }

    /// <summary>About a millisecond of pure CPU.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong Spin(ulong x)
    {
        for (int i = 0; i < 600_000; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x | 1;
    }
}
