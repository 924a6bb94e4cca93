using Microsoft.Diagnostics.Runtime;

namespace HeapOracle;

/// <summary>
/// `HeapOracle DUMP PREFIX`: opens a core dump made by the runtime's createdump, walks the
/// GC heap with ClrMD and prints <c>COUNT type=&lt;name&gt; objects=&lt;n&gt; bytes=&lt;b&gt;</c> for
/// every type whose name starts with PREFIX, then <c>TOTAL objects=&lt;n&gt;</c> (all types).
/// Objects ClrMD finds in the heap segments: live ones, and dead ones not yet swept.
/// </summary>
public static class Program
{
    public static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: HeapOracle DUMP TYPE-PREFIX");
            return 2;
        }
        using var target = DataTarget.LoadDump(args[0]);
        using var runtime = target.ClrVersions[0].CreateRuntime();
        var counts = new SortedDictionary<string, (long Objects, ulong Bytes)>(StringComparer.Ordinal);
        long total = 0;
        foreach (var obj in runtime.Heap.EnumerateObjects())
        {
            if (!obj.IsValid || obj.IsFree)
            {
                continue;
            }
            total++;
            string name = obj.Type?.Name ?? "?";
            if (!name.StartsWith(args[1], StringComparison.Ordinal))
            {
                continue;
            }
            var (n, b) = counts.GetValueOrDefault(name);
            counts[name] = (n + 1, b + obj.Size);
        }
        foreach (var (name, (n, b)) in counts)
        {
            Console.WriteLine($"COUNT type={name} objects={n} bytes={b}");
        }
        Console.WriteLine($"TOTAL objects={total}");
        return 0;
    }
}
