using System.Globalization;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `abi`: NoInlining methods taking and returning int, long, float, double, mixed
/// int/double, 16-byte and 24-byte structs and long argument lists, with deterministic
/// results; prints each value and a checksum over their bits. The output must be the same
/// with and without a profiler.
/// </summary>
public static class Abi
{
    private static ulong s_hash = 14695981039346656037UL;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        // `abi rounds=N`: the whole set N times with inputs that change by round, so that
        // a profiler that learns where a function's values lie from its first calls is
        // checked on later calls too. Round 0's keys have no suffix, later ones `_rN`.
        int rounds = args.NamedInt("rounds", 1);
        for (int r = 0; r < rounds; r++)
        {
            s_hash = 14695981039346656037UL;
            Round(r);
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Round(int r)
    {
        string suffix = r == 0 ? "" : $"_r{r}";
        var values = new List<(string Key, object Value)>();
        void Add(string key, object value, ulong bits)
        {
            values.Add((key + suffix, value));
            Mix(bits);
        }

        int i = AddInt(40 + r, 2);
        Add("abi_int", i, (ulong)i);
        long l = MulLong(3_000_000_007L + r, -5L);
        Add("abi_long", l, (ulong)l);
        float f = MixFloat(1.5f + r, -2.25f);
        Add("abi_float", f, BitConverter.SingleToUInt32Bits(f));
        double d = MixDouble(Math.PI + r, Math.E);
        Add("abi_double", d, BitConverter.DoubleToUInt64Bits(d));
        double m = Mixed(7 + r, 0.5, -3, 1e10, long.MaxValue / 3, 0.25f);
        Add("abi_mixed", m, BitConverter.DoubleToUInt64Bits(m));

        S16 s16 = SwapS16(MakeS16(11 + r, -22));
        Add("abi_s16", $"{s16.A},{s16.B}", (ulong)s16.A ^ ((ulong)s16.B << 1));
        long s16Sum = SumS16(s16, 5 + r);
        Add("abi_s16_sum", s16Sum, (ulong)s16Sum);

        S24 s24 = RotateS24(MakeS24(1 + r, 2, 3), 4);
        Add("abi_s24", $"{s24.A},{s24.B},{s24.C}", (ulong)(s24.A * 1_000_003 + s24.B * 1_009 + s24.C));
        long s24Sum = SumS24(7 + r, s24, 9);
        Add("abi_s24_sum", s24Sum, (ulong)s24Sum);

        SMix mix = ScaleMix(new SMix(1.25 + r, 40 + r), 3.0);
        Add("abi_smix", $"{Text(mix.D)},{mix.L}", BitConverter.DoubleToUInt64Bits(mix.D) ^ (ulong)mix.L);

        SF4 f4 = AddSF4(new SF4(1f + r, 2f, 3f, 4f), new SF4(0.5f, 0.25f, 0.125f, 0.0625f));
        Add(
            "abi_sf4",
            $"{Text(f4.X)},{Text(f4.Y)},{Text(f4.Z)},{Text(f4.W)}",
            BitConverter.SingleToUInt32Bits(f4.X) ^ ((ulong)BitConverter.SingleToUInt32Bits(f4.W) << 32));

        // A string, then a struct split across an integer and a float register.
        int described = Describe("order-" + r, new ID(7 + r, 0.25 * (r + 1)));
        Add("abi_describe", described, (ulong)described);

        // Seven primitives of as many kinds: six in registers, the seventh on the stack.
        long sevenPrims = SevenPrims((byte)(200 + r), -3, 'x', true, 4_000_000_000u, 1UL << 40, -(5L + r));
        Add("abi_seven_prims", sevenPrims, (ulong)sevenPrims);

        long manyInts = ManyInts(1 + r, 2, 3, 4, 5, 6, 7, 8, 9, 10 + r);
        Add("abi_many_ints", manyInts, (ulong)manyInts);
        double manyDoubles = ManyDoubles(0.1 + r, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0 + r);
        Add("abi_many_doubles", manyDoubles, BitConverter.DoubleToUInt64Bits(manyDoubles));
        double manyMixed = ManyMixed(1 + r, 0.5, 2L, 1.5f, 3, 2.5, 4L, 3.5f, 5, 4.5, new S16(6, 7), new S24(8, 9, 10 + r));
        Add("abi_many_mixed", manyMixed, BitConverter.DoubleToUInt64Bits(manyMixed));

        values.Insert(0, ("abi" + suffix, s_hash.ToString("x16", CultureInfo.InvariantCulture)));
        Results.Print(values.ToArray());
    }

    private static string Text(double d) => d.ToString("R", CultureInfo.InvariantCulture);

    private static string Text(float f) => f.ToString("R", CultureInfo.InvariantCulture);

    private static void Mix(ulong bits)
    {
        for (int k = 0; k < 8; k++)
        {
            s_hash ^= (bits >> (8 * k)) & 0xff;
            s_hash *= 1099511628211UL;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int AddInt(int a, int b) => a + b;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long MulLong(long a, long b) => a * b;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static float MixFloat(float a, float b) => (a * b) + a;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double MixDouble(double a, double b) => (a * b) - (a / b);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Mixed(int a, double b, int c, double d, long e, float f) =>
        (a * b) + (c * d) + (e % 1000) + f;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static S16 MakeS16(long a, long b) => new(a, b);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static S16 SwapS16(S16 s) => new(s.B, s.A);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumS16(S16 s, int k) => (s.A * k) + s.B;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static S24 MakeS24(long a, long b, long c) => new(a, b, c);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static S24 RotateS24(S24 s, int times)
    {
        for (int k = 0; k < times; k++)
        {
            s = new S24(s.B, s.C, s.A * 10);
        }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SumS24(int before, S24 s, int after) => before + s.A + s.B + s.C + after;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static SMix ScaleMix(SMix m, double factor) => new(m.D * factor, m.L * (long)factor);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static SF4 AddSF4(SF4 a, SF4 b) => new(a.X + b.X, a.Y + b.Y, a.Z + b.Z, a.W + b.W);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SevenPrims(byte a, short b, char c, bool d, uint e, ulong f, long g) =>
        a + b + c + (d ? 1 : 0) + e + (long)(f >> 20) + g;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ManyInts(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j) =>
        a + (2L * b) + (3L * c) + (4L * d) + (5L * e) + (6L * f) + (7L * g) + (8L * h) + (9L * i) + (10L * j);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Describe(string name, ID v) => (name.Length * 1000) + v.I + (int)(v.D * 100);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double ManyDoubles(
        double a, double b, double c, double d, double e, double f, double g, double h, double i, double j) =>
        a + (2 * b) + (3 * c) + (4 * d) + (5 * e) + (6 * f) + (7 * g) + (8 * h) + (9 * i) + (10 * j);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double ManyMixed(
        int a, double b, long c, float d, int e, double f, long g, float h, int i, double j, S16 k, S24 l) =>
        a + b + c + d + e + f + g + h + i + j + k.A + k.B + l.A + l.B + l.C;
}
