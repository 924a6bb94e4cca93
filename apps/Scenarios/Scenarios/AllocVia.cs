using System.Runtime.CompilerServices;
using System.Text.Json;

namespace Scenarios;

/// <summary>
/// `alloc-via [mb=400]`: two methods of the app that allocate only through the framework,
/// so that every allocation's leaf frame is the framework's. AllocVia.Serialize spends
/// three quarters of `mb` MiB in JsonSerializer.Serialize (strings and the serializer's
/// buffers), AllocVia.Arrays a quarter in Enumerable.Range(…).ToArray(). Each stops at its
/// budget by the thread's allocation counter and prints what it allocated, with
/// GC.GetTotalAllocatedBytes(true).
/// </summary>
public static class AllocVia
{
    public sealed record Reading(int Sensor, double Value, string Unit);

    private static object? _sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        long total = (long)args.Int("mb", 400) * 1024 * 1024;
        var reading = new Reading(7, 21.5, "degC");
        long before = GC.GetAllocatedBytesForCurrentThread();
        Serialize(reading, total * 3 / 4);
        long afterSerialize = GC.GetAllocatedBytesForCurrentThread();
        Arrays(total / 4);
        long afterArrays = GC.GetAllocatedBytesForCurrentThread();
        GC.KeepAlive(_sink);
        Results.Print(
            ("serialize_bytes", afterSerialize - before),
            ("arrays_bytes", afterArrays - afterSerialize),
            ("total_allocated", GC.GetTotalAllocatedBytes(true)));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Serialize(Reading reading, long budget)
    {
        long start = GC.GetAllocatedBytesForCurrentThread();
        while (GC.GetAllocatedBytesForCurrentThread() - start < budget)
        {
            _sink = JsonSerializer.Serialize(reading);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Arrays(long budget)
    {
        long start = GC.GetAllocatedBytesForCurrentThread();
        while (GC.GetAllocatedBytesForCurrentThread() - start < budget)
        {
            _sink = Enumerable.Range(0, 256).ToArray();
        }
    }
}
