using System.Runtime.CompilerServices;

namespace Scenarios.Known;

/// <summary>A plain class the `classes` scenario instantiates.</summary>
public sealed class Beta
{
    public string Label { get; } = "beta";

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Describe() => Label.Length;
}
