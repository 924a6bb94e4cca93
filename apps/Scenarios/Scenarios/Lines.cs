using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `lines [seconds=2]`: a busy loop on one known source line, for source-line mapping.
/// <c>Lines.Busy</c> spins for the seconds given with all its work on the line marked
/// `busy line` (a loop and its body on one line; the loop condition's clock read is a call
/// of its own), then the async <c>Lines.BusyAsync</c> does the same after an await, on the
/// line marked `async busy line`, in its state machine's <c>MoveNext</c>. Neither method is
/// marked for optimization, so each runs in its Tier-0 code, its OSR version and its
/// Tier-1 code in turn. The inner loop is long (about 2 ms) so that the clock read of the
/// loop condition is rare: the suspend sampler stops a thread at its next safe point, and
/// a call (the clock read) is one, so short inner loops would put a share of the samples
/// on the condition's line. The test finds the marked lines in this file. Busy first prints
/// the line its caller's frame is on, as the runtime's own <c>StackTrace(true)</c> reads it.
/// </summary>
public static class Lines
{
    private static ulong s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 2);
        ulong x = 0x9E3779B97F4A7C15;
        x = Busy(x, Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency));
        x = BusyAsync(x, Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency)).GetAwaiter().GetResult();
        s_sink = x;
        Results.Print(("lines_seconds", seconds), ("lines_sink", s_sink & 1));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong Busy(ulong x, long deadline)
    {
        // The line of the call in Run as the runtime's own stack trace names it (an oracle
        // for the profiler's call-site lines), printed at once for a test that attaches.
        Results.Print(("busy_call_line", new StackTrace(true).GetFrame(1)?.GetFileLineNumber() ?? -1));
        Console.Out.Flush();
        while (Stopwatch.GetTimestamp() < deadline)
        {
            for (int i = 0; i < 2_000_000; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; } // busy line
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<ulong> BusyAsync(ulong x, long deadline)
    {
        await Task.Yield();
        while (Stopwatch.GetTimestamp() < deadline)
        {
            for (int i = 0; i < 2_000_000; i++) { x ^= x << 11; x ^= x >> 9; x ^= x << 15; } // async busy line
        }
        return x;
    }
}

/// <summary>
/// `alloc-lines [mb=200]`: allocates `mb` MiB as 1 KiB byte arrays on one known source line
/// of <c>AllocLines.Fill</c> (marked `alloc line`), for the lines of allocation samples.
/// Fill prints the line its caller's frame is on and the line of the allocating statement,
/// both as the runtime's own <c>StackTrace(true)</c> reads them (the test's oracle).
/// </summary>
public static class AllocLines
{
    private static object? s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long n = (long)args.Int("mb", 200) * 1024;
        long made = Fill(n);
        s_sink = null;
        Results.Print(("alloc_lines_objects", made));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Fill(long n)
    {
        Results.Print(("fill_call_line", new StackTrace(true).GetFrame(1)?.GetFileLineNumber() ?? -1));
        int allocLine = -1;
        for (long i = 0; i < n; i++)
        {
            var a = new byte[1000]; a[0] = (byte)i; s_sink = a; if (i == 0) { allocLine = new StackTrace(true).GetFrame(0)?.GetFileLineNumber() ?? -1; } // alloc line
        }
        Results.Print(("alloc_line", allocLine));
        return n;
    }
}
