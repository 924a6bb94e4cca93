using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Scenarios;

/// <summary>A node of the list held by <see cref="HeapHolder.List"/>: no other payload.</summary>
public sealed class HeapNode
{
    public HeapNode? Next;
    public long Value;
}

/// <summary>Objects held only by a local of <see cref="Heap.Hold"/>.</summary>
public sealed class HeapLocal
{
    public long Value;
}

/// <summary>Two objects referring to each other, held by a [ThreadStatic].</summary>
public sealed class HeapCycle
{
    public HeapCycle? Other;
}

/// <summary>The object at the end of an inherited field and of an own field.</summary>
public sealed class HeapLeaf
{
    public int Tag;
}

public class HeapBase
{
    public HeapLeaf? BaseLeaf;
}

public sealed class HeapDerived : HeapBase
{
    public HeapLeaf? OwnLeaf;
}

/// <summary>Held only through a reference field of a struct.</summary>
public sealed class HeapStructLeaf
{
    public int Tag;
}

/// <summary>A struct with a reference after a non-reference field.</summary>
public struct HeapPair
{
    public long Count;
    public HeapStructLeaf? Ref;
}

/// <summary>An element of a struct array: a reference, then a value.</summary>
public struct HeapSlot
{
    public HeapStructLeaf? Ref;
    public int X;
}

/// <summary>A class with a <see cref="HeapPair"/> embedded after a field of its own.</summary>
public sealed class HeapStructHolder
{
    public int Id;
    public HeapPair S;
}

/// <summary>Held by two statics at once: retained by neither, reached by both.</summary>
public sealed class HeapShared
{
    public long[] Payload = new long[10_000];
}

/// <summary>The statics the heap scenario's graph hangs from.</summary>
public static class HeapHolder
{
    public static HeapNode? List;
    public static HeapDerived? Derived;
    public static byte[]? Large;
    public static string? Text;
    /// <summary>A string literal: the runtime allocates it in the non-GC (frozen) heap.</summary>
    public static string? Literal;
    public static int Count;
    public static double Ratio;
    /// <summary>A <see cref="HeapStructLeaf"/> through a struct embedded in a class.</summary>
    public static HeapStructHolder? Embedded;
    /// <summary>A <see cref="HeapStructLeaf"/> through a boxed struct.</summary>
    public static object? Boxed;
    /// <summary>A <see cref="HeapStructLeaf"/> in the second element of a struct array.</summary>
    public static HeapSlot[]? Slots;
    /// <summary>One <see cref="HeapShared"/> (80 000 bytes of payload) under both.</summary>
    public static HeapShared? SharedA;
    public static HeapShared? SharedB;
    [ThreadStatic]
    public static HeapCycle? Cycle;
}

/// <summary>
/// `heap [n=1000]`: builds a known graph — n <see cref="HeapNode"/>s in a list under
/// <c>HeapHolder.List</c>, n/2 <see cref="HeapLocal"/>s held only by a local, a two-object
/// <see cref="HeapCycle"/> under a [ThreadStatic] of the thread clrprof-heap-ts, a LOH
/// array, an array pinned by a handle, an object with an inherited field, a built string, a
/// string literal (in the non-GC heap), a leaf held through a struct embedded in a class
/// (<c>HeapHolder.Embedded</c>: <c>S.Ref</c>) and one through a boxed struct
/// (<c>HeapHolder.Boxed</c>: <c>Ref</c>), one in an element of a struct array
/// (<c>HeapHolder.Slots</c>: <c>[].Ref</c>), a <see cref="HeapShared"/> under two statics —
/// prints its facts and <c>READY &lt;pid&gt;</c>, then on the stdin line <c>free</c> drops
/// the second half of the list and of the locals and prints <c>FREED</c>, and ends at EOF.
/// The line <c>ticker</c> starts a thread that wakes every millisecond and notes the longest
/// gap between two wake-ups (a stop of the runtime stops it too); <c>gap</c> prints
/// <c>GAP &lt;ms&gt;</c>, the longest since the previous <c>gap</c>. (Off by default: the
/// ticker's objects would be in the known graph.)
/// </summary>
public static class Heap
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 1000);
        int m = n / 2;
        var pinned = Build(n);
        using var cycleSet = new ManualResetEventSlim(false);
        using var stop = new ManualResetEventSlim(false);
        var owner = new Thread(() =>
        {
            MakeCycle();
            cycleSet.Set();
            stop.Wait();
            GC.KeepAlive(HeapHolder.Cycle);
        })
        { Name = "clrprof-heap-ts", IsBackground = true };
        owner.Start();
        cycleSet.Wait();

        int rc = Hold(m, n);
        stop.Set();
        owner.Join();
        pinned.Free();
        return rc;
    }

    /// <summary>Everything but the locals and the cycle; no reference stays in a frame.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static GCHandle Build(int n)
    {
        HeapNode? head = null;
        for (int i = n - 1; i >= 0; i--)
        {
            head = new HeapNode { Next = head, Value = i };
        }
        HeapHolder.List = head;
        HeapHolder.Derived = new HeapDerived { BaseLeaf = new HeapLeaf { Tag = 1 }, OwnLeaf = new HeapLeaf { Tag = 2 } };
        HeapHolder.Large = new byte[100_000];
        HeapHolder.Text = string.Concat("heap-", n.ToString(System.Globalization.CultureInfo.InvariantCulture));
        HeapHolder.Literal = "clrprof-frozen-literal";
        HeapHolder.Count = n;
        HeapHolder.Ratio = 0.25;
        HeapHolder.Embedded = new HeapStructHolder { Id = 1, S = new HeapPair { Count = 1, Ref = new HeapStructLeaf { Tag = 3 } } };
        HeapHolder.Boxed = new HeapPair { Count = 2, Ref = new HeapStructLeaf { Tag = 4 } };
        HeapHolder.Slots = new HeapSlot[3];
        HeapHolder.Slots[1] = new HeapSlot { Ref = new HeapStructLeaf { Tag = 5 }, X = 7 };
        HeapHolder.SharedA = HeapHolder.SharedB = new HeapShared();
        return GCHandle.Alloc(new byte[1000], GCHandleType.Pinned);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void MakeCycle()
    {
        var a = new HeapCycle();
        a.Other = new HeapCycle { Other = a };
        HeapHolder.Cycle = a;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static HeapLocal[] MakeLocals(int m)
    {
        var locals = new HeapLocal[m];
        for (int i = 0; i < m; i++)
        {
            locals[i] = new HeapLocal { Value = i };
        }
        return locals;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int Hold(int m, int n)
    {
        var locals = MakeLocals(m);
        Results.Print(("heap_nodes", n), ("heap_locals", m), ("heap_cycle", 2), ("heap_leaves", 2),
            ("heap_text", HeapHolder.Text!), ("heap_count", HeapHolder.Count), ("heap_ratio", HeapHolder.Ratio),
            ("heap_literal", HeapHolder.Literal!));
        Console.Out.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        string? line;
        while ((line = Console.In.ReadLine()) != null)
        {
            if (line == "ticker")
            {
                Ticker.Start();
                Console.Out.WriteLine("TICKING");
                Console.Out.Flush();
            }
            else if (line == "gap")
            {
                Console.Out.WriteLine($"GAP {Ticker.TakeLongestGapMs():F1}");
                Console.Out.Flush();
            }
            else if (line == "free")
            {
                Free(locals, n);
                Results.Print(("heap_nodes_after", n / 2), ("heap_locals_after", m / 2));
                Console.Out.WriteLine("FREED");
                Console.Out.Flush();
            }
        }
        int alive = 0;
        // Read after the wait: keeps `locals` live on this frame until here.
        foreach (var l in locals)
        {
            alive += l is null ? 0 : 1;
        }
        GC.KeepAlive(locals);
        return alive > 0 ? 0 : 1;
    }

    /// <summary>Cuts the list after its first n/2 nodes and drops the second half of the locals.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Free(HeapLocal[] locals, int n)
    {
        var node = HeapHolder.List;
        for (int i = 1; i < n / 2; i++)
        {
            node = node!.Next;
        }
        node!.Next = null;
        for (int i = locals.Length / 2; i < locals.Length; i++)
        {
            locals[i] = null!;
        }
    }
}

/// <summary>The longest time between two wake-ups of a thread that sleeps 1 ms: how long the
/// runtime (or the machine) stopped it.</summary>
internal static class Ticker
{
    private static long s_longestTicks;

    public static void Start()
    {
        var t = new Thread(() =>
        {
            long last = System.Diagnostics.Stopwatch.GetTimestamp();
            while (true)
            {
                Thread.Sleep(1);
                long now = System.Diagnostics.Stopwatch.GetTimestamp();
                long gap = now - last;
                last = now;
                long seen = Interlocked.Read(ref s_longestTicks);
                while (gap > seen)
                {
                    long was = Interlocked.CompareExchange(ref s_longestTicks, gap, seen);
                    if (was == seen)
                    {
                        break;
                    }
                    seen = was;
                }
            }
        })
        { Name = "clrprof-heap-ticker", IsBackground = true };
        t.Start();
    }

    public static double TakeLongestGapMs()
    {
        long ticks = Interlocked.Exchange(ref s_longestTicks, 0);
        return ticks * 1000.0 / System.Diagnostics.Stopwatch.Frequency;
    }
}
