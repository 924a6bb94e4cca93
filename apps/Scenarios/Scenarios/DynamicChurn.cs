using System.Diagnostics;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `dynamic-churn [seconds=3] [threads=2]`: LCG methods that live about a millisecond each.
/// Each thread emits a <c>DynamicMethod</c> that spins, calls it for ~1 ms, and drops it;
/// a collector thread runs <c>GC.Collect()</c> and waits for finalizers every 20 ms, so the
/// methods' resolvers are finalized, their code freed and emptied code heaps released
/// while a sampler may hold return addresses into them (the window of a lookup of a
/// freed dynamic method between a stack copy and <c>GetFunctionFromIP3</c>).
/// </summary>
public static class DynamicChurn
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 3);
        int threads = args.Int("threads", 2);
        long end = Stopwatch.GetTimestamp() + seconds * Stopwatch.Frequency;
        long made = 0, collections = 0;
        var workers = new Thread[threads];
        for (int t = 0; t < threads; t++)
        {
            workers[t] = new Thread(() =>
            {
                long mine = 0;
                while (Stopwatch.GetTimestamp() < end)
                {
                    var f = Emit(mine++);
                    long stop = Stopwatch.GetTimestamp() + Stopwatch.Frequency / 1000;
                    // Called at least once, so every method counted was compiled: a thread
                    // that lost its core for the whole millisecond made one that never ran.
                    do
                    {
                        f(10_000);
                    }
                    while (Stopwatch.GetTimestamp() < stop);
                }
                Interlocked.Add(ref made, mine);
            });
            workers[t].Start();
        }
        while (Stopwatch.GetTimestamp() < end)
        {
            Thread.Sleep(20);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            collections++;
        }
        foreach (var w in workers)
        {
            w.Join();
        }
        Results.Print(("dynamic_churn_methods", made), ("dynamic_churn_collections", collections));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static Func<int, int> Emit(long k)
    {
        var m = new DynamicMethod($"Churn{k}", typeof(int), [typeof(int)], typeof(DynamicChurn).Module);
        var il = m.GetILGenerator();
        var x = il.DeclareLocal(typeof(int));
        var loop = il.DefineLabel();
        var cond = il.DefineLabel();
        il.Emit(OpCodes.Ldc_I4, (int)(k & 0xffff));
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Br, cond);
        il.MarkLabel(loop);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ldc_I4, 31);
        il.Emit(OpCodes.Mul);
        il.Emit(OpCodes.Stloc, x);
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Ldc_I4_1);
        il.Emit(OpCodes.Sub);
        il.Emit(OpCodes.Starg, 0);
        il.MarkLabel(cond);
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Ldc_I4_0);
        il.Emit(OpCodes.Bgt, loop);
        il.Emit(OpCodes.Ldloc, x);
        il.Emit(OpCodes.Ret);
        return m.CreateDelegate<Func<int, int>>();
    }
}
