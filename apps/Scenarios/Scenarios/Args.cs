using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `args`: calls <c>Scenarios.ArgTargets.*</c> methods that take and return every kind of
/// value `record --args` decodes (the cases of dotnet/runtime's slow-path ELT tests
/// slowpatheltenter.cs / slowpatheltleave.cs among them: integer, floating-point, mixed
/// and large structs, doubles), and prints what it passed and got back as RESULT lines
/// (`<case>_<what>=value`; strings without spaces). The output is the same with and
/// without a profiler.
/// </summary>
public static class ArgsScenario
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int bench = args.NamedInt("bench", 0);
        if (bench > 0)
        {
            return Bench(bench);
        }
        var t = ArgTargets.AddInt(40, 2);
        Results.Print(("addint1_a", 40), ("addint1_b", 2), ("addint1_ret", t));
        t = ArgTargets.AddInt(-7, 3);
        Results.Print(("addint2_a", -7), ("addint2_b", 3), ("addint2_ret", t));
        long l = ArgTargets.MulLong(3_000_000_007L, -5L);
        Results.Print(("mullong_a", 3_000_000_007L), ("mullong_b", -5L), ("mullong_ret", l));
        long big = ArgTargets.MulLong(long.MaxValue / 2, 2);
        Results.Print(("mullongbig_ret", big));
        double d = ArgTargets.Half(9.5);
        Results.Print(("half_d", 9.5), ("half_ret", d));
        float f = ArgTargets.Scale(1.5f, -2.25f);
        Results.Print(("scale_f", 1.5f), ("scale_k", -2.25f), ("scale_ret", f));
        bool b = ArgTargets.Not(true);
        Results.Print(("not_b", true), ("not_ret", b));
        char c = ArgTargets.Next('A');
        Results.Print(("next_c", "A"), ("next_ret", c.ToString()));
        Color e = ArgTargets.Shift(Color.Green, 1);
        Results.Print(("shift1_c", Color.Green.ToString()), ("shift1_ret", e.ToString()));
        e = ArgTargets.Shift((Color)40, 2);
        Results.Print(("shift2_c", 40), ("shift2_ret", (int)e));
        string s = ArgTargets.Greet("Ann");
        Results.Print(("greet_name", "Ann"), ("greet_ret", s.Replace(' ', '_')));
        string longText = new string('x', 300);
        int len = ArgTargets.Length(longText);
        Results.Print(("length_ret", len));
        string? n = ArgTargets.Echo(null);
        Results.Print(("echo_ret_null", n is null));
        var dog = new Dog { Name = "Rex", Legs = 4, Good = true };
        int legs = ArgTargets.LegsOf(dog);
        Results.Print(("legs_name", dog.Name), ("legs_legs", dog.Legs), ("legs_good", dog.Good), ("legs_ret", legs));
        object boxed = ArgTargets.Identity(42);
        Results.Print(("identity_o", 42), ("identity_ret", (int)boxed));
        int sum = ArgTargets.Sum([1, 2, 3]);
        Results.Print(("sum_xs", "1,2,3"), ("sum_ret", sum));
        int[] many = Enumerable.Range(100, 20).ToArray();
        int manySum = ArgTargets.Sum(many);
        Results.Print(("summany_len", many.Length), ("summany_ret", manySum));
        int total = ArgTargets.TotalLength(["a", "bb", "ccc"]);
        Results.Print(("total_ss", "a,bb,ccc"), ("total_ret", total));
        P2 p2 = ArgTargets.Flip(new P2(3, -4));
        Results.Print(("flip_p", "3,-4"), ("flip_ret", $"{p2.X},{p2.Y}"));
        FFD ffd = ArgTargets.MakeFFD(0.5f, 1.25f, -8.5);
        double ffdSum = ArgTargets.SumFFD(ffd);
        Results.Print(("ffd_ret", "0.5,1.25,-8.5"), ("sumffd_ret", ffdSum));
        ID id = ArgTargets.Bump(new ID(7, 0.25));
        Results.Print(("bump_v", "7,0.25"), ("bump_ret", $"{id.I},{id.D.ToString(System.Globalization.CultureInfo.InvariantCulture)}"));
        Big bigS = ArgTargets.MakeBig(10);
        long bigSum = ArgTargets.SumBig(bigS);
        Results.Print(("makebig_ret", "10,11,12,13,14"), ("sumbig_ret", bigSum));
        Pair<int, string> pair = ArgTargets.MakePair(5, "five");
        int first = ArgTargets.PairFirst(pair);
        Results.Print(("makepair_ret", $"{pair.First},{pair.Second}"), ("pairfirst_ret", first));
        int x = 5;
        ArgTargets.Inc(ref x);
        Results.Print(("inc_before", 5), ("inc_after", x));
        bool parsed = ArgTargets.TryParse("123", out int v);
        Results.Print(("tryparse_s", "123"), ("tryparse_ret", parsed), ("tryparse_v", v));
        var counter = new Counter();
        int c1 = counter.Add(3);
        int c2 = counter.Add(4);
        Results.Print(("add1_before", 0), ("add1_ret", c1), ("add2_before", 3), ("add2_ret", c2));
        int caught = 0;
        try
        {
            ArgTargets.Fail(9);
        }
        catch (InvalidOperationException)
        {
            caught++;
        }
        Results.Print(("fail_x", 9), ("fail_caught", caught));
        return 0;
    }

    /// <summary>`args bench=N`: N calls of <c>ArgTargets.Describe(string, ID)</c>, timed (stopwatch and
/// thread CPU time).</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int Bench(int n)
    {
        long sum = 0;
        double cpu = ThreadCpu.Microseconds();
        var watch = System.Diagnostics.Stopwatch.StartNew();
        for (int i = 0; i < n; i++)
        {
            sum += ArgTargets.Describe("order-17", new ID(i, 0.5));
        }
        double us = watch.Elapsed.TotalMicroseconds;
        cpu = ThreadCpu.Microseconds() - cpu;
        Results.Print(
            ("describe_calls", n), ("describe_sum", sum), ("describe_us", (long)us), ("describe_cpu_us", (long)cpu));
        return 0;
    }
}

public enum Color
{
    Red = 1,
    Green = 2,
    Blue = 3,
}

public class Animal
{
    public string Name = "";
    public int Legs;
}

public sealed class Dog : Animal
{
    public bool Good;
}

public sealed class Counter
{
    private int _count;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Add(int n)
    {
        _count += n;
        return _count;
    }
}

public readonly record struct P2(int X, int Y);

public readonly record struct FFD(float A, float B, double C);

public readonly record struct ID(int I, double D);

public readonly record struct Big(long A, long B, long C, long D, long E);

public struct Pair<T, U>
{
    public T First;
    public U Second;
}

/// <summary>The methods whose arguments the test records (`--args 'Scenarios.ArgTargets.*'`).</summary>
public static class ArgTargets
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int AddInt(int a, int b) => a + b;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long MulLong(long a, long b) => a * b;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Half(double d) => d / 2;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static float Scale(float f, float k) => f * k;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool Not(bool b) => !b;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static char Next(char c) => (char)(c + 1);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Color Shift(Color c, int n) => (Color)((int)c + n);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string Greet(string name) => "Hello, " + name;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Length(string s) => s.Length;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string? Echo(string? s) => s;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int LegsOf(Animal a) => a.Legs;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static object Identity(object o) => o;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Sum(int[] xs)
    {
        int s = 0;
        foreach (var x in xs)
        {
            s += x;
        }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int TotalLength(string[] ss)
    {
        int s = 0;
        foreach (var x in ss)
        {
            s += x.Length;
        }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static P2 Flip(P2 p) => new(p.Y, p.X);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static FFD MakeFFD(float a, float b, double c) => new(a, b, c);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double SumFFD(FFD v) => v.A + v.B + v.C;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ID Bump(ID v) => new(v.I + 1, v.D * 2);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Big MakeBig(long seed) => new(seed, seed + 1, seed + 2, seed + 3, seed + 4);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumBig(Big b) => b.A + b.B + b.C + b.D + b.E;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Pair<int, string> MakePair(int n, string s) => new() { First = n, Second = s };

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int PairFirst(Pair<int, string> p) => p.First;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Inc(ref int x) => x++;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool TryParse(string s, out int v) => int.TryParse(s, out v);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Describe(string name, ID v) => name.Length + v.I;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Fail(int x) => throw new InvalidOperationException($"fail {x}");
}
