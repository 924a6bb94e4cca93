using System.Diagnostics;
using System.Globalization;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `jit-storm [n=2000]`: keeps the runtime's background JIT thread (".NET Tiered
/// Compilation Worker") busy. It makes n distinct instantiations of the generic
/// <c>JitStorm.Work&lt;T&gt;.Run</c> over value types (each has code of its own), calls
/// each a few times (Tier-0, on the main thread), then in rounds enough times for the
/// runtime to recompile every one at Tier 1 in the background, and waits until the JIT
/// goes quiet. Prints the worker's OS id and the CPU it used, read from /proc.
/// </summary>
public static class JitStorm
{
    public struct B0 { public int V; }
    public struct B1 { public long V; }
    public struct B2 { public byte V; }
    public struct B3 { public short V; }
    public struct B4 { public int V, W; }
    public struct B5 { public long V, W; }
    public struct B6 { public double V; }
    public struct B7 { public float V; }
    public struct B8 { public int V; public byte W; }
    public struct B9 { public long V; public int W; }
    public struct B10 { public short V, W, X; }
    public struct B11 { public double V; public int W; }
    public struct B12 { public byte V, W, X, Y; }
    public struct B13 { public float V, W; }
    public struct B14 { public long V; public short W; }
    public struct B15 { public int V, W, X; }

    public struct P<TA, TB>
    {
        public TA A;
        public TB B;
    }

    /// <summary>The generic class whose every value-type instantiation the JIT compiles again.</summary>
    public static class Work<T>
    {
        private static readonly T[] Items = new T[16];

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Run(int n)
        {
            int acc = Unsafe.SizeOf<T>();
            var items = Items;
            for (int i = 0; i < n; i++)
            {
                T t = items[i & 15];
                acc ^= (acc << 5) + (acc >> 2) + i;
                switch (acc & 7)
                {
                    case 0: acc += 3; break;
                    case 1: acc -= 7; break;
                    case 2: acc *= 3; break;
                    case 3: acc ^= 0x55; break;
                    case 4: acc += i * 11; break;
                    case 5: acc -= i >> 1; break;
                    case 6: acc |= 1; break;
                    default: acc &= 0x7fffffff; break;
                }
                items[(i + 1) & 15] = t;
            }
            for (int j = 0; j < 4; j++)
            {
                acc = unchecked(acc * 31 + j) ^ (acc >>> 3);
                if ((acc & 1) == 0)
                {
                    acc += Unsafe.SizeOf<T>() * j;
                }
            }
            return acc;
        }
    }

    private static readonly Type[] Bases =
    [
        typeof(B0), typeof(B1), typeof(B2), typeof(B3), typeof(B4), typeof(B5), typeof(B6), typeof(B7),
        typeof(B8), typeof(B9), typeof(B10), typeof(B11), typeof(B12), typeof(B13), typeof(B14), typeof(B15),
    ];

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 2000);
        var types = new List<Type>(n);
        // 16 bases, 256 pairs of them, then pairs of a pair and a base: all value types.
        foreach (var b in Bases)
        {
            types.Add(b);
        }
        foreach (var a in Bases)
        {
            foreach (var b in Bases)
            {
                types.Add(typeof(P<,>).MakeGenericType(a, b));
            }
        }
        for (int i = 0; types.Count < n; i++)
        {
            var pair = types[16 + (i % 256)];
            types.Add(typeof(P<,>).MakeGenericType(pair, Bases[(i / 256) % 16]));
        }
        var runs = new List<Func<int, int>>(n);
        foreach (var t in types.Take(n))
        {
            var m = typeof(Work<>).MakeGenericType(t).GetMethod("Run")!;
            runs.Add(m.CreateDelegate<Func<int, int>>());
        }
        long sink = 0;
        // Tier 0 on this thread.
        foreach (var r in runs)
        {
            sink += r(4);
        }
        // Rounds past the call-counting threshold (30) and its delay (100 ms), twice over
        // for tiered PGO's instrumented tier: every instantiation reaches Tier 1.
        for (int round = 0; round < 4; round++)
        {
            Thread.Sleep(150);
            foreach (var r in runs)
            {
                for (int c = 0; c < 35; c++)
                {
                    sink += r(4);
                }
            }
        }
        // Wait until the background JIT goes quiet.
        long last = System.Runtime.JitInfo.GetCompiledMethodCount(false);
        var quiet = Stopwatch.StartNew();
        var total = Stopwatch.StartNew();
        while (quiet.ElapsedMilliseconds < 600 && total.ElapsedMilliseconds < 30_000)
        {
            Thread.Sleep(50);
            long now = System.Runtime.JitInfo.GetCompiledMethodCount(false);
            if (now != last)
            {
                last = now;
                quiet.Restart();
            }
        }
        var (tid, cpuMs) = JitWorker();
        Results.Print(
            ("jit_instantiations", runs.Count),
            ("jit_methods", last),
            ("jit_worker_tid", tid),
            ("jit_worker_cpu_ms", cpuMs),
            ("jit_sink", sink & 1));
        return 0;
    }

    /// <summary>The tiered-compilation worker's OS id and CPU milliseconds (-1 when not found).</summary>
    private static (int Tid, long CpuMs) JitWorker()
    {
        if (!OperatingSystem.IsLinux())
        {
            return (-1, -1);
        }
        foreach (var dir in Directory.EnumerateDirectories("/proc/self/task"))
        {
            string comm;
            string stat;
            try
            {
                comm = File.ReadAllText(Path.Combine(dir, "comm")).Trim();
                stat = File.ReadAllText(Path.Combine(dir, "stat"));
            }
            catch (IOException)
            {
                continue;
            }
            if (!comm.StartsWith(".NET Tiered Com", StringComparison.Ordinal))
            {
                continue;
            }
            string[] fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
            long ticks = long.Parse(fields[11], CultureInfo.InvariantCulture)
                + long.Parse(fields[12], CultureInfo.InvariantCulture);
            return (int.Parse(Path.GetFileName(dir), CultureInfo.InvariantCulture), ticks * 10);
        }
        return (-1, -1);
    }
}
