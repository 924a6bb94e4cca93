using System.Diagnostics;
using System.Linq.Expressions;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Scenarios;

/// <summary>
/// `dynamic [seconds=2]`: code without metadata of its own, as ASP.NET makes it. For the
/// first half of the time, a lambda compiled by <c>Expression.Compile()</c> (the runtime
/// names it <c>lambda_method1</c>…) calls a <c>DynamicMethod</c> named <c>DynSpin</c> that
/// spins (both LCG methods); for the second half, <c>Dynamic.Marshalled</c> calls
/// <c>strlen</c> through a P/Invoke whose string argument needs a marshalling IL stub.
/// </summary>
public static partial class Dynamic
{
    [DllImport("libc", EntryPoint = "strlen", CharSet = CharSet.Ansi)]
    private static extern nint StrLen(string s);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 2);
        var spin = new DynamicMethod("DynSpin", typeof(int), [typeof(int)], typeof(Dynamic).Module);
        var il = spin.GetILGenerator();
        var x = il.DeclareLocal(typeof(int));
        var i = il.DeclareLocal(typeof(int));
        var loop = il.DefineLabel();
        var cond = il.DefineLabel();
        il.Emit(OpCodes.Ldc_I4_0);
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Ldc_I4_0);
        il.Emit(OpCodes.Stloc, i);
        il.Emit(OpCodes.Br, cond);
        il.MarkLabel(loop);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ldc_I4, 31);
        il.Emit(OpCodes.Mul);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Ldc_I4_1);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Stloc, i);
        il.MarkLabel(cond);
        il.Emit(OpCodes.Ldloc, i);
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Blt, loop);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ret);
        var dynSpin = spin.CreateDelegate<Func<int, int>>();

        // n => dynSpin(n) + 1, compiled: an LCG method of its own.
        var n = Expression.Parameter(typeof(int), "n");
        var body = Expression.Add(
            Expression.Invoke(Expression.Constant(dynSpin), n),
            Expression.Constant(1));
        var lambda = Expression.Lambda<Func<int, int>>(body, n).Compile();

        long half = seconds * Stopwatch.Frequency / 2;
        long lambdaCalls = 0;
        long sink = 0;
        long end = Stopwatch.GetTimestamp() + half;
        while (Stopwatch.GetTimestamp() < end)
        {
            sink += lambda(1_000_000);
            lambdaCalls++;
        }
        long pinvokes = 0;
        end = Stopwatch.GetTimestamp() + half;
        while (Stopwatch.GetTimestamp() < end)
        {
            sink += Marshalled();
            pinvokes++;
        }
        Results.Print(
            ("dynamic_lambda_calls", lambdaCalls),
            ("dynamic_pinvokes", pinvokes),
            ("dynamic_lambda_name", lambda.Method.Name),
            ("dynamic_sink", sink & 1));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Marshalled()
    {
        long total = 0;
        for (int k = 0; k < 100; k++)
        {
            total += StrLen("clrprof marshals this string through an IL stub");
        }
        return total;
    }
}
