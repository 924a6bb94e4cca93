using System.Runtime.CompilerServices;
using Scenarios.Known;

namespace Scenarios;

/// <summary>
/// `alloc [n=10000]`: allocates n Scenarios.Known.Allocated kept alive in an array, then
/// one GC.Collect().
/// </summary>
public static class Alloc
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 10_000);
        var kept = new Allocated[n];
        for (int i = 0; i < n; i++)
        {
            kept[i] = Make(i);
        }
        GC.Collect();
        int alive = 0;
        long sum = 0;
        foreach (var a in kept)
        {
            if (a is not null)
            {
                alive++;
                sum += a.Square;
            }
        }
        Results.Print(
            ("allocated", n),
            ("alive", alive),
            ("class", TypeNames.Display(typeof(Allocated))),
            ("checksum", sum));
        GC.KeepAlive(kept);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static Allocated Make(int i) => new(i);
}
