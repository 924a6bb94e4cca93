using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>Dispatches on args[0] to one scenario; see apps/README.md for the list.</summary>
public static class Program
{
    private static readonly (string Name, string Usage, Func<ScenarioArgs, int> Run)[] All =
    [
        ("exceptions", "exceptions [n=7]", Exceptions.Run),
        ("threads", "threads", Threads.Run),
        ("gc", "gc [n=3]", Gc.Run),
        ("classes", "classes", Classes.Run),
        ("alloc", "alloc [n=10000]", Alloc.Run),
        ("wait", "wait", Wait.Run),
        ("fib", "fib [n=25]", FibScenario.Run),
        ("calls", "calls", Calls.Run),
        ("deep-exceptions", "deep-exceptions", DeepExceptions.Run),
        ("threads64", "threads64 [calls=10000]", Threads64.Run),
        ("abi", "abi", Abi.Run),
        ("hot", "hot [seconds=3]", Hot.RunHot),
        ("sleeper", "sleeper [seconds=3]", Sleeper.Run),
        ("churn", "churn [seconds=10]", Churn.Run),
        ("serve", "serve", Serve.Run),
        ("crunch", "crunch [work=20000]", Crunch.Run),
        ("sequential-threads", "sequential-threads [n=30]", SequentialThreads.Run),
        ("spawn", "spawn [n=3]", Spawn.Run),
        ("deep", "deep [depth=1000] [seconds=1]", Deep.Run),
        ("args", "args", ArgsScenario.Run),
        ("args-recursive", "args-recursive [depth=6] [rounds=20]", ArgsRecursive.Run),
        ("args-text", "args-text", ArgsText.Run),
        ("hostile-args", "hostile-args", HostileArgs.Run),
        ("heap", "heap [n=1000]", Heap.Run),
        ("alloc-sites", "alloc-sites [mb=400]", AllocSites.Run),
        ("alloc-live", "alloc-live [mb=64]", AllocLive.Run),
        ("alloc-loop", "alloc-loop", AllocLoop.Run),
        ("alloc-small", "alloc-small [mb=2000]", AllocSmall.Run),
        ("alloc-shapes", "alloc-shapes [mb=400]", AllocShapes.Run),
        ("alloc-via", "alloc-via [mb=400]", AllocVia.Run),
        ("blocked", "blocked", Blocked.Run),
        ("waits", "waits [rounds=5]", Waits.Run),
        ("emitted", "emitted [calls=1000]", EmittedScenario.Run),
        ("lines", "lines [seconds=2]", Lines.Run),
        ("alloc-lines", "alloc-lines [mb=200]", AllocLines.Run),
        ("jit-storm", "jit-storm [n=2000]", JitStorm.Run),
        ("pool-hot", "pool-hot [seconds=2] [workers=4]", PoolHot.Run),
        ("dynamic", "dynamic [seconds=2]", Dynamic.Run),
        ("dynamic-churn", "dynamic-churn [seconds=3] [threads=2]", DynamicChurn.Run),
        ("r2r-words", "r2r-words [seconds=1]", R2rWords.Run),
    ];

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Main(string[] args)
    {
        if (args.Length == 0)
        {
            return Usage("no scenario given");
        }
        foreach (var (name, _, run) in All)
        {
            if (name == args[0])
            {
                var scenarioArgs = ScenarioArgs.Parse(args.AsSpan(1));
                if (scenarioArgs is null)
                {
                    return Usage($"bad arguments for {name}");
                }
                int rc = run(scenarioArgs);
                // Which runtime ran the scenario, for the tests that run on .NET 8, 9 and 10.
                Results.Print(("runtime", Environment.Version));
                // Not a tail call: keeps Main on the stack below every scenario.
                Console.Out.Flush();
                return rc;
            }
        }
        return Usage($"unknown scenario '{args[0]}'");
    }

    private static int Usage(string problem)
    {
        Console.Error.WriteLine($"Scenarios: {problem}");
        Console.Error.WriteLine("usage: dotnet Scenarios.dll <scenario> [args]");
        foreach (var (_, usage, _) in All)
        {
            Console.Error.WriteLine($"  {usage}");
        }
        return 2;
    }
}
