namespace Coverage;

/// `serve`: the target of `clrprof coverage --pid`. Prints `READY <pid>`; each stdin line
/// `work` runs `Branches.Switch` and `Branches.Loops` and prints `DONE`; EOF or `quit` ends.
public static class Serve
{
    public static int Run()
    {
        Console.WriteLine($"READY {Environment.ProcessId}");
        Console.Out.Flush();
        string? line;
        while ((line = Console.ReadLine()) != null && line != "quit")
        {
            if (line == "work")
            {
                var s = Branches.Switch(3) + Branches.Loops(2);
                Console.WriteLine($"DONE {s}");
                Console.Out.Flush();
            }
        }
        return 0;
    }
}
