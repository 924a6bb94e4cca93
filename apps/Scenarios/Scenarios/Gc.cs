using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `gc [n=3]`: exactly n calls of GC.Collect(2, Forced, blocking: true) and nothing else
/// that induces a collection.
/// </summary>
public static class Gc
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 3);
        int gen0Before = GC.CollectionCount(0);
        int gen2Before = GC.CollectionCount(2);
        for (int i = 0; i < n; i++)
        {
            Induce();
        }
        int gen0 = GC.CollectionCount(0) - gen0Before;
        int gen2 = GC.CollectionCount(2) - gen2Before;
        Results.Print(("gc_induced", n), ("gen2_collections", gen2), ("gen0_collections", gen0));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Induce() => GC.Collect(2, GCCollectionMode.Forced, blocking: true);
}
