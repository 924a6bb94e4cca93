using System.Runtime.CompilerServices;
using System.Threading;

namespace Scenarios;

/// <summary>
/// `fib [n=25] [threads=1]`: naive recursive <c>Scenarios.FibScenario.Fib</c>, counting its
/// own calls (2·F(n+1) − 1: 242785 for n = 25). With threads=N, N threads each run the
/// same recursion in <c>FibUncounted</c> (a shared counter would race) at the same time;
/// `fib_us` is then the time until the last one finished (one thread: also `fib_cpu_us`, its CPU
/// time). With seconds=S (one thread), it
/// computes Fib(n) again and again for S seconds.
/// </summary>
public static class FibScenario
{
    private static long s_calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 25);
        int threads = args.NamedInt("threads", 1);
        if (threads > 1)
        {
            return RunThreads(n, threads);
        }
        double cpu = ThreadCpu.Microseconds();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        int fib = Fib(n);
        // seconds=S: Fib(n) again and again until S seconds have passed (a call rate
        // sustained for a known time, whatever the machine's speed).
        int seconds = args.NamedInt("seconds", 0);
        while (watch.Elapsed.TotalSeconds < seconds)
        {
            fib = Fib(n);
        }
        double us = watch.Elapsed.TotalMicroseconds;
        cpu = ThreadCpu.Microseconds() - cpu;
        Results.Print(
            ("fib_calls", s_calls), ("fib", fib), ("n", n), ("fib_us", (long)us), ("fib_cpu_us", (long)cpu));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Fib(int n)
    {
        s_calls++;
        return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
    }

    private static int RunThreads(int n, int threads)
    {
        var start = new Barrier(threads + 1);
        var results = new int[threads];
        var workers = new Thread[threads];
        for (int i = 0; i < threads; i++)
        {
            int slot = i;
            workers[i] = new Thread(() =>
            {
                start.SignalAndWait();
                results[slot] = FibUncounted(n);
            }) { Name = $"fib-{i}" };
            workers[i].Start();
        }
        start.SignalAndWait();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        foreach (var w in workers)
        {
            w.Join();
        }
        double us = watch.Elapsed.TotalMicroseconds;
        Results.Print(("fib", results[0]), ("n", n), ("threads", threads), ("fib_us", (long)us));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int FibUncounted(int n) =>
        n < 2 ? n : FibUncounted(n - 1) + FibUncounted(n - 2);
}
