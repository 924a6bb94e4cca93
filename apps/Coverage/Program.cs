namespace Coverage;

public static class Program
{
    public static async Task<int> Main(string[] args)
    {
        if (args.Length > 0 && args[0] != "crash") // hit br 1/4
        {
            return Serve.Run(args); // miss
        }
        var sink = new List<string>(); // hit
        Branches.IfElse(3, sink); // hit
        sink.Add(Branches.Switch(2)); // hit
        sink.Add(Branches.Loops(4).ToString()); // hit
        sink.Add(Branches.TryCatchFinally(0)); // hit
        var f = Branches.Lambda(); // hit
        sink.Add(f(5).ToString()); // hit
        sink.Add((await Branches.AsyncWork(2)).ToString()); // hit
        foreach (var x in Branches.Iterate(3)) // hit br 2/2
        {
            sink.Add(x.ToString()); // hit
        }
        if (args.Length > 0 && args[0] == "crash") // hit br 1/4
        {
            Console.WriteLine(string.Join(",", sink)); // miss
            Console.Out.Flush(); // miss
            Environment.FailFast("crash on request"); // miss
        }
        Console.WriteLine(string.Join(",", sink)); // hit
        return 0; // hit
    } // hit
}

public static class Branches
{
    public static void IfElse(int n, List<string> sink)
    {
        if (n > 2) // hit br 1/2
        {
            sink.Add("big"); // hit
        }
        else
        {
            sink.Add("small"); // miss
        }
    } // miss

    public static string Switch(int k)
    {
        switch (k)
        {
            case 1:
                return "one"; // miss
            case 2:
                return "two"; // hit
            case 3:
                return "three"; // miss
            default:
                return "many"; // miss
        }
    }

    public static int Loops(int n)
    {
        int total = 0; // hit
        for (int i = 0; i < n; i++) // hit br 2/2
        {
            total += i; // hit
        }
        while (total > 100) // hit br 1/2
        {
            total -= 100; // miss
        }
        return total; // hit
    }

    public static string TryCatchFinally(int d)
    {
        string s = "start"; // hit
        try
        {
            s += (10 / d).ToString(); // hit
        } // miss
        catch (DivideByZeroException) // hit
        {
            s += "-caught"; // hit
        } // hit
        finally
        {
            s += "-finally"; // hit
        } // hit
        return s; // hit
    }

    public static Func<int, int> Lambda()
    {
        int k = 3; // hit
        return x => x * k; // hit
    }

    public static async Task<int> AsyncWork(int n)
    {
        await Task.Yield(); // hit
        if (n > 100) // hit br 1/2
        {
            return -1; // miss
        }
        return n * 2; // hit
    } // hit

    public static IEnumerable<int> Iterate(int n)
    {
        for (int i = 0; i < n; i++) // hit br 2/2
        {
            yield return i * i; // hit
        }
    } // hit

    public static int NeverCalled(int x)
    {
        if (x > 0) // miss br 0/2
        {
            return x + 1; // miss
        }
        return x - 1; // miss
    }
}
