using System.Globalization;
using System.Runtime.CompilerServices;

namespace Scenarios;

// Structs nested deeper than any argument reader describes: a reader that gave up and
// guessed "reference" read the innermost long as an object and crashed the runtime.
public struct N1 { public long V; public long W; }
public struct N2 { public N1 I; public long V; }
public struct N3 { public N2 I; public long V; }
public struct N4 { public N3 I; public long V; }
public struct N5 { public N4 I; public long V; }
public struct N6 { public N5 I; public long V; }
public struct N7 { public N6 I; public long V; }
public struct N8 { public N7 I; public long V; }
public struct N9 { public N8 I; public long V; }
public struct N10 { public N9 I; public long V; }

/// <summary>256 bytes of longs: passed by reference to a copy on SysV x64.</summary>
public struct Big256
{
    public long A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15;
    public long B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15;
}

/// <summary>A class that points at itself.</summary>
public sealed class Cycle
{
    public Cycle? Next;
    public long Id;
}

/// <summary>A struct holding a reference and a nested struct.</summary>
public struct WithRef
{
    public string Name;
    public N3 Inner;
}

/// <summary>
/// `hostile-args`: NoInlining methods with every shape of argument an argument reader must
/// survive: structs nested 3, 7 and 10 deep, boxed, a 256-byte struct, an object and an
/// array that contain themselves, a 10 MB string, ref/out/in, Span and ReadOnlySpan,
/// pointers, 21 arguments, generic methods over value and reference types, struct
/// returns, a method that throws, an async method and an iterator. Prints each result
/// and a checksum; the output must be the same with and without a profiler.
/// </summary>
public static class HostileArgs
{
    private static ulong s_hash = 14695981039346656037UL;

    private static void Mix(long v)
    {
        s_hash = (s_hash ^ (ulong)v) * 1099511628211UL;
    }

    public static int Run(ScenarioArgs args)
    {
        var values = new List<(string Key, object Value)>();
        void Add(string key, long value)
        {
            values.Add((key, value));
            Mix(value);
        }

        var n10 = MakeN10(3);
        Add("hostile_n3", SumN3(n10.I.I.I.I.I.I.I, 1));
        Add("hostile_n7", SumN7(n10.I.I.I, 2));
        Add("hostile_n10", SumN10(n10, 3));
        Add("hostile_n10_ret", MakeN10(5).I.I.I.I.I.I.I.I.I.V);
        Add("hostile_boxed", Unbox(n10.I.I.I, 4));
        Add("hostile_with_ref", WithRefLen(new WithRef { Name = "abc", Inner = n10.I.I.I.I.I.I.I }));

        var big = new Big256 { A0 = 1, A7 = 7, B15 = 15 };
        Add("hostile_big", SumBig(big, 2));
        Add("hostile_big_ret", MakeBig(9).B15);

        var cycle = new Cycle { Id = 42 };
        cycle.Next = cycle;
        Add("hostile_cycle", Follow(cycle, 1000));
        var selfArray = new object[3];
        selfArray[0] = selfArray;
        selfArray[1] = cycle;
        selfArray[2] = "x";
        Add("hostile_self_array", CountSelf(selfArray));

        string huge = new string('z', 10 * 1024 * 1024);
        Add("hostile_huge_string", Length(huge));

        long r = 5;
        AddRef(ref r, 7);
        Add("hostile_ref", r);
        MakeOut(out long o, 11);
        Add("hostile_out", o);
        Add("hostile_in", ReadIn(in big));

        Span<long> span = stackalloc long[4] { 1, 2, 3, 4 };
        Add("hostile_span", SumSpan(span));
        Add("hostile_ro_span", SumChars("hello".AsSpan()));
        Add("hostile_empty_span", SumSpan(default));
        Add("hostile_ptr", SumPointer(span));

        Add("hostile_21", TwentyOne(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21));
        Add("hostile_generic_struct", Generic(n10.I.I.I, 3).I.V);
        Add("hostile_generic_class", Generic("gen", 2).Length);
        Add("hostile_generic_long", Generic(77L, 1));

        long caught = 0;
        for (int i = 0; i < 3; i++)
        {
            try
            {
                Throws(i);
            }
            catch (InvalidOperationException e)
            {
                caught += e.Message.Length;
            }
        }
        Add("hostile_throws", caught);
        Add("hostile_async", SumAsync(10).GetAwaiter().GetResult());
        long it = 0;
        foreach (var v in Iterate(5, n10.I.I.I.I.I.I.I))
        {
            it += v;
        }
        Add("hostile_iterator", it);

        values.Insert(0, ("hostile", s_hash.ToString("x16", CultureInfo.InvariantCulture)));
        Results.Print(values.ToArray());
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static N10 MakeN10(long seed)
    {
        var n = new N10 { V = seed };
        n.I.V = seed + 1;
        n.I.I.V = seed + 2;
        n.I.I.I.V = seed + 3;
        n.I.I.I.I.V = seed + 4;
        n.I.I.I.I.I.V = seed + 5;
        n.I.I.I.I.I.I.V = seed + 6;
        n.I.I.I.I.I.I.I.V = seed + 7;
        n.I.I.I.I.I.I.I.I.V = seed + 8;
        n.I.I.I.I.I.I.I.I.I.V = seed + 9;
        n.I.I.I.I.I.I.I.I.I.W = 0xb;
        return n;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumN3(N3 n, long k) => n.V + n.I.V + n.I.I.V + n.I.I.W + k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumN7(N7 n, long k) => n.V + n.I.I.I.I.I.I.W + k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumN10(N10 n, long k) => n.V + n.I.I.I.I.I.I.I.I.I.W + k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Unbox(object boxed, long k) => boxed is N7 n ? n.V + k : -1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long WithRefLen(WithRef w) => w.Name.Length + w.Inner.V;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumBig(Big256 b, long k) => b.A0 + b.A7 + b.B15 + k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Big256 MakeBig(long v) => new Big256 { A0 = v, B15 = v * 2 };

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Follow(Cycle c, int steps)
    {
        long sum = 0;
        for (int i = 0; i < steps; i++)
        {
            sum += c.Id;
            c = c.Next!;
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long CountSelf(object[] a)
    {
        long n = 0;
        foreach (var x in a)
        {
            if (ReferenceEquals(x, a))
            {
                n++;
            }
        }
        return n + a.Length;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Length(string s) => s.Length;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void AddRef(ref long x, long k) => x += k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void MakeOut(out long x, long k) => x = k * 3;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ReadIn(in Big256 b) => b.A7 + b.B15;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumSpan(Span<long> s)
    {
        long sum = 0;
        foreach (var v in s)
        {
            sum += v;
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumChars(ReadOnlySpan<char> s)
    {
        long sum = 0;
        foreach (var c in s)
        {
            sum += c;
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static unsafe long SumPointer(Span<long> s)
    {
        fixed (long* p = s)
        {
            return SumRaw(p, s.Length);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static unsafe long SumRaw(long* p, int n)
    {
        long sum = 0;
        for (int i = 0; i < n; i++)
        {
            sum += p[i] * (i + 1);
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long TwentyOne(
        long a1, int a2, double a3, long a4, float a5, long a6, int a7, double a8, long a9, long a10,
        int a11, double a12, long a13, float a14, long a15, int a16, double a17, long a18, long a19,
        int a20, double a21) =>
        a1 + a2 + (long)a3 + a4 + (long)a5 + a6 + a7 + (long)a8 + a9 + a10 + a11 + (long)a12 + a13
        + (long)a14 + a15 + a16 + (long)a17 + a18 + a19 + a20 + (long)a21;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static T Generic<T>(T value, int times)
    {
        T last = value;
        for (int i = 0; i < times; i++)
        {
            last = value;
        }
        return last;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Throws(int i) =>
        throw new InvalidOperationException($"hostile {i} {new string('!', i)}");

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<long> SumAsync(int n)
    {
        long sum = 0;
        for (int i = 0; i < n; i++)
        {
            await Task.Yield();
            sum += i;
        }
        return sum;
    }

    public static IEnumerable<long> Iterate(int n, N3 seed)
    {
        for (int i = 0; i < n; i++)
        {
            yield return seed.V + i;
        }
    }
}
