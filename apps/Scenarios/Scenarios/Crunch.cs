using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `crunch [work=20000]`: a fixed amount of CPU-bound work split over two threads
/// (crunch-1, crunch-2), each unit going through a few nested calls (sieve, hash, sort),
/// for measuring a profiler's overhead: the run time is the figure, the work never varies.
/// </summary>
public static class Crunch
{
    private static long s_checksum;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int work = args.Int("work", 20000);
        var threads = new Thread[2];
        for (int i = 0; i < threads.Length; i++)
        {
            int id = i;
            threads[i] = new Thread(() => Worker(id, work / threads.Length)) { Name = $"crunch-{i + 1}" };
            threads[i].Start();
        }
        foreach (var t in threads)
        {
            t.Join();
        }
        Results.Print(("work", work), ("checksum", s_checksum));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Worker(int id, int units)
    {
        long sum = 0;
        for (int u = 0; u < units; u++)
        {
            sum += Unit(id * 1_000_003 + u);
        }
        Interlocked.Add(ref s_checksum, sum);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Unit(int seed) => Sieve(20_000 + seed % 97) + Hash(seed) + SortChecksum(seed);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Sieve(int limit)
    {
        var composite = new bool[limit + 1];
        long count = 0;
        for (int i = 2; i <= limit; i++)
        {
            if (composite[i])
            {
                continue;
            }
            count++;
            for (long j = (long)i * i; j <= limit; j += i)
            {
                composite[j] = true;
            }
        }
        return count;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Hash(int seed)
    {
        ulong h = 1469598103934665603UL ^ (ulong)seed;
        for (int i = 0; i < 20_000; i++)
        {
            h = (h ^ (ulong)i) * 1099511628211UL;
        }
        return (long)(h % 1_000_003);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long SortChecksum(int seed)
    {
        var rng = new Random(seed);
        var data = new int[2_000];
        for (int i = 0; i < data.Length; i++)
        {
            data[i] = rng.Next();
        }
        Array.Sort(data);
        return data[data.Length / 2] % 1_000;
    }
}
