using System.Runtime.CompilerServices;

namespace Scenarios.Known;

/// <summary>A plain class the `classes` scenario instantiates.</summary>
public sealed class Alpha
{
    public int Value { get; } = 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Describe() => Value * 10;
}
