using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `deep [depth=1000] [seconds=1]`: recurses `depth` frames through `Deep.Down` and spins
/// at the bottom for `seconds`, so every sample of the main thread is deeper than depth.
/// </summary>
public static class Deep
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int depth = args.Int("depth", 1000);
        int seconds = args.NamedInt("seconds", 1);
        long spins = Down(depth, Stopwatch.StartNew(), seconds * 1000L);
        Results.Print(("depth", depth), ("deep_spins", spins > 0 ? 1 : 0));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Down(int left, Stopwatch clock, long ms)
    {
        if (left > 1)
        {
            // Not a tail call: the result is used.
            return Down(left - 1, clock, ms) + 1;
        }
        long spins = 0;
        while (clock.ElapsedMilliseconds < ms)
        {
            spins++;
        }
        return spins;
    }
}
