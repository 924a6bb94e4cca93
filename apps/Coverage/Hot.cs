using System.Diagnostics;

namespace Coverage;

/// `hot N`: N calls of `Step` (three sequence points, one `if`: a counted hit or four per
/// call), timed by the app's own stopwatch: `hot_us=<µs>`. `clrprof-bench coverage` runs it
/// with and without coverage for the cost of one counted hit.
public static class Hot
{
    public static int Run(long n)
    {
        var sw = Stopwatch.StartNew();
        long acc = 0;
        for (long i = 0; i < n; i++)
        {
            acc += Step(i);
        }
        sw.Stop();
        Console.WriteLine($"hot_us={sw.Elapsed.Ticks / 10} acc={acc}");
        return 0;
    }

    public static long Step(long i)
    {
        long x = i & 7;
        if (x > 3)
        {
            x -= 2;
        }
        return x;
    }
}
