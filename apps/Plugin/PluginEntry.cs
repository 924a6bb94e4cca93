using System.Runtime.CompilerServices;

namespace Plugin;

/// <summary>Entry point that Scenarios calls by reflection after loading this assembly.</summary>
public static class PluginEntry
{
    /// <summary>Sums the squares 1..n; a little JIT-compiled work inside the plugin.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Run(int n)
    {
        long sum = 0;
        for (int i = 1; i <= n; i++)
        {
            sum += (long)i * i;
        }
        return sum;
    }
}
