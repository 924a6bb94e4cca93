using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `churn [seconds=10]`: keeps about 100 short-lived threads (all named `churn`) starting
/// and exiting for the given time; each computes a small sum that the main thread checks.
/// </summary>
public static class Churn
{
    private const int InFlight = 100;
    private static long s_actual;
    private static long s_completed;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 10);
        long deadline = Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency);
        var live = new Queue<Thread>(InFlight);
        long started = 0;
        long expected = 0;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            if (live.Count >= InFlight)
            {
                live.Dequeue().Join();
            }
            int k = (int)(started % 100) + 1;
            expected += Expected(k);
            var t = new Thread(() => Body(k)) { Name = "churn" };
            t.Start();
            live.Enqueue(t);
            started++;
        }
        while (live.Count > 0)
        {
            live.Dequeue().Join();
        }
        long completed = Interlocked.Read(ref s_completed);
        long actual = Interlocked.Read(ref s_actual);
        Results.Print(
            ("threads_started", started),
            ("threads_completed", completed),
            ("checksum", actual),
            ("max_in_flight", InFlight),
            ("seconds", seconds));
        Results.Print(("churn_ok", completed == started && actual == expected));
        return 0;
    }

    private static void Body(int k)
    {
        Interlocked.Add(ref s_actual, ChurnWork(k));
        Interlocked.Increment(ref s_completed);
    }

    /// <summary>1² + 2² + … + k², the slow way.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ChurnWork(int k)
    {
        long sum = 0;
        for (long i = 1; i <= k; i++)
        {
            sum += i * i;
        }
        return sum;
    }

    private static long Expected(long k) => k * (k + 1) * ((2 * k) + 1) / 6;
}
