using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `args-recursive [depth=6] [rounds=20]`: <c>Scenarios.Recursive.Down(n)</c> calls itself
/// down to 0 and returns n + (n-1) + … + 0, `rounds` times: calls of one method nested on
/// one thread, each with its own argument and return value, as `record --args` must pair
/// them with their own calls.
/// </summary>
public static class ArgsRecursive
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int depth = args.NamedInt("depth", 6);
        int rounds = args.NamedInt("rounds", 20);
        long total = 0;
        for (int r = 0; r < rounds; r++)
        {
            total += Recursive.Down(depth);
        }
        Results.Print(("down_total", total), ("depth", depth), ("rounds", rounds));
        return 0;
    }
}

public static class Recursive
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Down(int n) => n == 0 ? 0 : Down(n - 1) + n;
}
