using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Text;

namespace Scenarios;

/// <summary>
/// `alloc-small [mb=2000]`: the allocations of a serializer or a web request handler,
/// many small objects: each record is a class with a few fields, a formatted string, a
/// small list of strings built with a StringBuilder and a short array, about 500 bytes
/// in a dozen objects, all dropped. Runs until `mb` MiB have been allocated on this thread
/// and prints the bytes, the records and the allocation rate.
/// </summary>
public static class AllocSmall
{
    private sealed class Row
    {
        public long Id;
        public string Name = "";
        public List<string> Tags = new();
        public int[] Scores = Array.Empty<int>();
    }

    private static object? _sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long total = (long)args.Int("mb", 2000) * 1024 * 1024;
        long before = GC.GetAllocatedBytesForCurrentThread();
        var sw = Stopwatch.StartNew();
        long rows = 0;
        var sb = new StringBuilder();
        while (GC.GetAllocatedBytesForCurrentThread() - before < total)
        {
            for (int i = 0; i < 1000; i++)
            {
                _sink = MakeRow(rows++, sb);
            }
        }
        sw.Stop();
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        Results.Print(
            ("allocated", allocated),
            ("rows", rows),
            ("mb_per_s", (long)(allocated / 1048576.0 / sw.Elapsed.TotalSeconds)),
            ("total_allocated", GC.GetTotalAllocatedBytes(true)));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static Row MakeRow(long id, StringBuilder sb)
    {
        var row = new Row { Id = id, Name = "customer-" + id.ToString() };
        for (int t = 0; t < 3; t++)
        {
            sb.Clear();
            sb.Append("tag").Append(t).Append('-').Append(id % 97);
            row.Tags.Add(sb.ToString());
        }
        row.Scores = new int[] { (int)id, t1(id), t2(id) };
        return row;
    }

    private static int t1(long id) => (int)(id * 31 % 1000);

    private static int t2(long id) => (int)(id * 17 % 1000);
}
