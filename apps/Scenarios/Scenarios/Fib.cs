using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `fib [n=25]`: naive recursive <c>Scenarios.FibScenario.Fib</c>, counting its own calls
/// (2·F(n+1) − 1: 242785 for n = 25).
/// </summary>
public static class FibScenario
{
    private static long s_calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 25);
        var watch = System.Diagnostics.Stopwatch.StartNew();
        int fib = Fib(n);
        double us = watch.Elapsed.TotalMicroseconds;
        Results.Print(("fib_calls", s_calls), ("fib", fib), ("n", n), ("fib_us", (long)us));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Fib(int n)
    {
        s_calls++;
        return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
    }
}
