using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `spawn [n=3]`: starts this app again as a child process (`exceptions n`, same runtime
/// host and environment, so it inherits any profiler variables), waits for it, and throws
/// n exceptions of its own. Each process prints its own pid, so a test can tell which
/// trace belongs to which.
/// </summary>
public static class Spawn
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int n = args.Int("n", 3);
        var psi = new ProcessStartInfo(Environment.ProcessPath!)
        {
            UseShellExecute = false,
            RedirectStandardOutput = true,
        };
        // A single-file app is its own executable (its assembly has no location): nothing
        // to name after it.
#pragma warning disable IL3000
        string dll = typeof(Spawn).Assembly.Location;
#pragma warning restore IL3000
        if (dll.Length > 0)
        {
            psi.ArgumentList.Add(dll);
        }
        psi.ArgumentList.Add("exceptions");
        psi.ArgumentList.Add($"n={n * 2}");
        using var child = Process.Start(psi)!;
        string childOut = child.StandardOutput.ReadToEnd();
        child.WaitForExit();
        int thrown = 0;
        for (int i = 0; i < n; i++)
        {
            try
            {
                Throw(i);
            }
            catch (InvalidOperationException)
            {
                thrown++;
            }
        }
        Results.Print(
            ("parent_pid", Environment.ProcessId),
            ("child_pid", child.Id),
            ("child_exit", child.ExitCode),
            ("child_exceptions", childOut.Contains($"exceptions={n * 2}") ? n * 2 : -1),
            ("parent_exceptions", thrown));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Throw(int i) => throw new InvalidOperationException($"parent #{i}");
}
