using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `wait`: prints <c>READY &lt;pid&gt;</c>, then blocks until stdin reaches end of file or ten
/// minutes pass, while a background thread named clrprof-busy does light work every 10 ms.
/// </summary>
public static class Wait
{
    private static long s_busyTicks;
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        using var stdinClosed = new ManualResetEventSlim(false);
        var busy = new Thread(BusyLoop) { Name = "clrprof-busy", IsBackground = true };
        busy.Start();
        var reader = new Thread(() => DrainStdin(stdinClosed)) { Name = "clrprof-stdin", IsBackground = true };
        reader.Start();

        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();

        bool eof = stdinClosed.Wait(TimeSpan.FromMinutes(10));
        Results.Print(("wait_exit", eof ? "eof" : "timeout"), ("busy_ticks", Interlocked.Read(ref s_busyTicks)));
        return 0;
    }

    private static void DrainStdin(ManualResetEventSlim closed)
    {
        using var stdin = Console.OpenStandardInput();
        var buffer = new byte[4096];
        while (stdin.Read(buffer, 0, buffer.Length) > 0)
        {
        }
        closed.Set();
    }

    private static void BusyLoop()
    {
        while (true)
        {
            s_sink += BusyTick(Interlocked.Increment(ref s_busyTicks));
            Thread.Sleep(10);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long BusyTick(long seed)
    {
        long sum = 0;
        for (long i = 0; i < 10_000; i++)
        {
            sum += (seed * 31 + i) % 7;
        }
        return sum;
    }
}
