using System.Runtime.CompilerServices;
using Scenarios.Known;

namespace Scenarios;

/// <summary>
/// `deep-exceptions`: 20 rounds of a DeepException thrown from Level10, ten frames below
/// Run. Level9, Level7, Level5 and Level3 have finally blocks (4 runs per round); Level6 has
/// <c>catch (DeepException e) when (Filter(e, top: false))</c>, whose filter returns false;
/// Run catches with <c>when (Filter(e, top: true))</c>, which returns true.
/// </summary>
public static class DeepExceptions
{
    private const int Rounds = 20;
    private static int s_thrown;
    private static int s_finallyRuns;
    private static int s_filterFalse;
    private static int s_filterTrue;
    private static int s_innerCatches;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int catches = 0;
        for (int round = 0; round < Rounds; round++)
        {
            try
            {
                Level1(round);
            }
            catch (DeepException e) when (Filter(e, top: true))
            {
                catches++;
            }
        }
        Results.Print(
            ("deep_throws", s_thrown),
            ("finally_runs", s_finallyRuns),
            ("filter_false", s_filterFalse),
            ("filter_true", s_filterTrue),
            ("inner_catches", s_innerCatches),
            ("catches", catches),
            ("depth", 10),
            ("exception_type", typeof(DeepException).FullName!));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool Filter(DeepException e, bool top)
    {
        if (top)
        {
            s_filterTrue++;
        }
        else
        {
            s_filterFalse++;
        }
        return top && e.Round >= 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level1(int round) => Level2(round);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level2(int round) => Level3(round);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level3(int round)
    {
        try
        {
            Level4(round);
        }
        finally
        {
            s_finallyRuns++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level4(int round) => Level5(round);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level5(int round)
    {
        try
        {
            Level6(round);
        }
        finally
        {
            s_finallyRuns++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level6(int round)
    {
        try
        {
            Level7(round);
        }
        catch (DeepException e) when (Filter(e, top: false))
        {
            s_innerCatches++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level7(int round)
    {
        try
        {
            Level8(round);
        }
        finally
        {
            s_finallyRuns++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level8(int round) => Level9(round);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level9(int round)
    {
        try
        {
            Level10(round);
        }
        finally
        {
            s_finallyRuns++;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level10(int round)
    {
        s_thrown++;
        throw new DeepException(round);
    }
}
