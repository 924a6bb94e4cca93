using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `exceptions [n=7]`: throws and catches exactly n InvalidOperationException ("boom #i");
/// the app throws nothing else.
/// </summary>
public static class Exceptions
{
    private static int s_thrown;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 7);
        int caught = 0;
        int messagesOk = 0;
        for (int i = 0; i < n; i++)
        {
            try
            {
                Throw(i);
            }
            catch (InvalidOperationException e)
            {
                caught++;
                if (e.Message == $"boom #{i}")
                {
                    messagesOk++;
                }
            }
        }
        Results.Print(
            ("exceptions", s_thrown),
            ("caught", caught),
            ("messages_ok", messagesOk),
            ("exception_type", typeof(InvalidOperationException).FullName!));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Throw(int i)
    {
        s_thrown++;
        throw new InvalidOperationException($"boom #{i}");
    }
}
