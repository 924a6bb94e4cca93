using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `alloc-sites [mb=400]`: allocates three quarters of `mb` MiB as 1 KiB byte arrays from
/// AllocSites.Bytes and a quarter as 1 KiB strings from AllocSites.Strings, dropping them.
/// Prints each site's bytes (the thread's allocation counter around it), the line of the
/// byte arrays' allocation by the runtime's own StackTrace(true), and the process's
/// GC.GetTotalAllocatedBytes(true).
/// </summary>
public static class AllocSites
{
    /// <summary>byte[1000] and a 499-character string are 1024 bytes each on x64.</summary>
    private const int ObjectBytes = 1024;

    private static object? _sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long total = (long)args.Int("mb", 400) * 1024 * 1024;
        long before = GC.GetAllocatedBytesForCurrentThread();
        long bytesObjects = Bytes(total * 3 / 4 / ObjectBytes);
        long afterBytes = GC.GetAllocatedBytesForCurrentThread();
        long stringObjects = Strings(total / 4 / ObjectBytes);
        long afterStrings = GC.GetAllocatedBytesForCurrentThread();
        GC.KeepAlive(_sink);
        Results.Print(
            ("bytes_site", afterBytes - before),
            ("bytes_objects", bytesObjects),
            ("strings_site", afterStrings - afterBytes),
            ("strings_objects", stringObjects),
            ("bytes_line", _bytesLine),
            ("total_allocated", GC.GetTotalAllocatedBytes(true)));
        return 0;
    }

    /// <summary>The line of Bytes' allocation as the runtime's own StackTrace(true) says,
    /// taken on the first iteration (on the allocation's line), printed by Run. The loop's
    /// body is one line, as in Lines.cs: on .NET 9 and 10 the allocation of a body spread
    /// over several lines mapped to the `for` line.</summary>
    private static int _bytesLine = -1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Bytes(long n)
    {
        for (long i = 0; i < n; i++)
        {
            // One line: the oracle's line is that of the whole statement group.
            var a = new byte[1000]; a[0] = (byte)i; _sink = a; if (i == 0) { _bytesLine = new StackTrace(true).GetFrame(0)?.GetFileLineNumber() ?? -1; }
        }
        return n;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Strings(long n)
    {
        for (long i = 0; i < n; i++)
        {
            _sink = new string((char)('a' + (i % 26)), 499);
        }
        return n;
    }
}

/// <summary>
/// `alloc-live [mb=64]`: keeps `mb` MiB alive as 8 KiB byte arrays in a list held by a
/// static (AllocLive.Keep), allocates four times as much that is dropped
/// (AllocLive.Drop), collects, and prints the kept bytes.
/// </summary>
public static class AllocLive
{
    /// <summary>byte[8168] is 8192 bytes on x64.</summary>
    private const int ObjectBytes = 8192;

    private static readonly List<byte[]> Kept = new();
    private static object? _sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long n = (long)args.Int("mb", 64) * 1024 * 1024 / ObjectBytes;
        for (long i = 0; i < n; i++)
        {
            Keep();
            Drop(4);
        }
        _sink = null;
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        Results.Print(
            ("kept_bytes", Kept.Count * (long)ObjectBytes),
            ("kept_objects", Kept.Count),
            ("dropped_bytes", n * 4 * ObjectBytes),
            ("total_allocated", GC.GetTotalAllocatedBytes(true)));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Keep() => Kept.Add(new byte[8168]);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Drop(int n)
    {
        for (int i = 0; i < n; i++)
        {
            _sink = new byte[8168];
        }
    }
}
