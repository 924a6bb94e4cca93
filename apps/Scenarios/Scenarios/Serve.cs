using System.Reflection;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `serve`: a long-running target for attach tests. Prints <c>READY &lt;pid&gt;</c>; threads
/// serve-worker-1 and serve-worker-2 loop calling ServeWork (about 1 ms of CPU each, then a
/// 1 ms sleep). Commands on stdin, one a line: <c>load</c> loads Plugin.dll (shipped next to
/// the app, not referenced) with Assembly.LoadFrom, calls into it and prints <c>LOADED</c>;
/// <c>result</c> prints <c>RESULT work_items=&lt;n&gt;</c>; <c>quit</c> or end of file exits 0.
/// </summary>
public static class Serve
{
    private static long s_workItems;
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        for (int i = 1; i <= 2; i++)
        {
            new Thread(WorkerLoop) { Name = $"serve-worker-{i}", IsBackground = true }.Start();
        }
        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();

        while (Console.In.ReadLine() is { } line)
        {
            switch (line.Trim())
            {
                case "load":
                    LoadPlugin();
                    Console.Out.WriteLine("LOADED");
                    break;
                case "result":
                    Results.Print(("work_items", Interlocked.Read(ref s_workItems)));
                    break;
                case "quit":
                    return 0;
                case "":
                    break;
                default:
                    Console.Error.WriteLine($"serve: unknown command '{line.Trim()}' (load, result, quit)");
                    break;
            }
            Console.Out.Flush();
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void LoadPlugin()
    {
        string path = Path.Combine(AppContext.BaseDirectory, "Plugin.dll");
        Assembly plugin = Assembly.LoadFrom(path);
        MethodInfo run = plugin.GetType("Plugin.PluginEntry", throwOnError: true)!.GetMethod("Run")!;
        Interlocked.Add(ref s_sink, (long)run.Invoke(null, [100])!);
    }

    private static void WorkerLoop()
    {
        ulong seed = (ulong)Environment.CurrentManagedThreadId;
        while (true)
        {
            seed = ServeWork(seed);
            Interlocked.Increment(ref s_workItems);
            Thread.Sleep(1);
        }
    }

    /// <summary>One work item: about a millisecond of pure CPU.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong ServeWork(ulong x)
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
