using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `alloc-loop`: a long-running target for attaching with `--alloc`. Prints
/// <c>READY &lt;pid&gt;</c>; thread alloc-loop allocates 1 KiB byte arrays in
/// AllocLoop.Work (about 100 KiB a millisecond) until stdin says <c>quit</c> or ends, then
/// prints <c>RESULT allocated=&lt;bytes&gt;</c>.
/// </summary>
public static class AllocLoop
{
    private static volatile bool s_stop;
    private static long s_allocated;
    private static object? _sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        var worker = new Thread(Loop) { Name = "alloc-loop", IsBackground = true };
        worker.Start();
        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        while (Console.In.ReadLine() is { } line && line.Trim() != "quit")
        {
        }
        s_stop = true;
        worker.Join();
        Results.Print(("allocated", Interlocked.Read(ref s_allocated)));
        return 0;
    }

    private static void Loop()
    {
        while (!s_stop)
        {
            Work(100);
            Thread.Sleep(1);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Work(int n)
    {
        for (int i = 0; i < n; i++)
        {
            _sink = new byte[1000];
        }
        Interlocked.Add(ref s_allocated, n * 1024L);
    }
}
