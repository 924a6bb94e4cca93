using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `alloc-shapes [mb=400]`: stacks made to look alike. One virtual call site
/// (AllocShapes.Through) calls, in turn, three implementations of IShape whose Make
/// methods allocate from frames of different sizes (byte arrays of 1, 2 and 3 KiB, called
/// one, two and three times in each round of six: 1:4:9 of the bytes), under 0 to 3
/// levels of recursion (AllocShapes.Nest). Each
/// Make counts its own bytes (the thread's allocation counter around the allocation).
/// Prints each implementation's bytes and GC.GetTotalAllocatedBytes(true).
/// </summary>
public static class AllocShapes
{
    private interface IShape
    {
        long Make(long i);
    }

    private static object? _sink;

    /// <summary>No locals to speak of.</summary>
    private sealed class Small : IShape
    {
        public long Bytes;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Make(long i)
        {
            long before = GC.GetAllocatedBytesForCurrentThread();
            var a = new byte[1000];
            a[0] = (byte)i;
            _sink = a;
            long n = GC.GetAllocatedBytesForCurrentThread() - before;
            Bytes += n;
            return n;
        }
    }

    /// <summary>A 64-byte stack buffer: a larger frame.</summary>
    private sealed class Medium : IShape
    {
        public long Bytes;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Make(long i)
        {
            Span<long> scratch = stackalloc long[8];
            scratch[(int)(i & 7)] = i;
            long before = GC.GetAllocatedBytesForCurrentThread();
            var a = new byte[2024 + (int)(scratch[(int)(i & 7)] & 0)];
            a[1] = (byte)i;
            _sink = a;
            long n = GC.GetAllocatedBytesForCurrentThread() - before;
            Bytes += n;
            return n;
        }
    }

    /// <summary>A 512-byte stack buffer: a larger frame still.</summary>
    private sealed class Large : IShape
    {
        public long Bytes;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Make(long i)
        {
            Span<long> scratch = stackalloc long[64];
            scratch[(int)(i & 63)] = i;
            long before = GC.GetAllocatedBytesForCurrentThread();
            var a = new byte[3048 + (int)(scratch[(int)(i & 63)] & 0)];
            a[2] = (byte)i;
            _sink = a;
            long n = GC.GetAllocatedBytesForCurrentThread() - before;
            Bytes += n;
            return n;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long total = (long)args.Int("mb", 400) * 1024 * 1024;
        var small = new Small();
        var medium = new Medium();
        var large = new Large();
        IShape[] shapes = [small, medium, large, medium, large, large];
        long made = 0;
        for (long i = 0; made < total; i++)
        {
            made += Nest((int)(i % 4), shapes[i % shapes.Length], i);
        }
        GC.KeepAlive(_sink);
        Results.Print(
            ("small_bytes", small.Bytes),
            ("medium_bytes", medium.Bytes),
            ("large_bytes", large.Bytes),
            ("total_allocated", GC.GetTotalAllocatedBytes(true)));
        return 0;
    }

    /// <summary>Recurses `depth` times, then calls the shape.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Nest(int depth, IShape shape, long i) =>
        depth == 0 ? Through(shape, i) : Nest(depth - 1, shape, i) + 0;

    /// <summary>The one call site of every Make.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Through(IShape shape, long i) => shape.Make(i);
}
