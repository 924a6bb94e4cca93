namespace Coverage;

/// `serve`: the target of `clrprof coverage --pid`. Prints `READY <pid>`; each stdin line
/// `work` runs `Branches.Switch` and `Branches.Loops` and prints `DONE`; EOF or `quit` ends.
/// `hot N`: `Hot.Run` (the bench's hot loop).
public static class Serve
{
    public static int Run(string[] args)
    {
        if (args[0] == "hot")
        {
            return Hot.Run(long.Parse(args[1]));
        }
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
