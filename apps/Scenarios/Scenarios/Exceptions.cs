using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `exceptions [n=7]`: throws and catches exactly n InvalidOperationException ("boom #i");
/// the app throws nothing else. It prints the source lines its first exception's own stack
/// trace names (<c>StackTrace(e, true)</c>, read from the PDB by the runtime): the throw in
/// Throw and the call in Run, an oracle for the profiler's exception-stack lines.
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
        int throwLine = 0;
        int callLine = 0;
        for (int i = 0; i < n; i++)
        {
            try
            {
                Throw(i);
            }
            catch (InvalidOperationException e)
            {
                caught++;
                if (i == 0)
                {
                    var trace = new System.Diagnostics.StackTrace(e, true);
                    throwLine = trace.GetFrame(0)?.GetFileLineNumber() ?? 0;
                    callLine = trace.GetFrame(1)?.GetFileLineNumber() ?? 0;
                }
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
            ("throw_line", throwLine),
            ("call_line", callLine),
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
