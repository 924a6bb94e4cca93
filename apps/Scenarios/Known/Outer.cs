using System.Runtime.CompilerServices;

namespace Scenarios.Known;

/// <summary>Holds the nested class <see cref="Inner"/> (full name <c>Scenarios.Known.Outer+Inner</c>).</summary>
public static class Outer
{
    public sealed class Inner
    {
        public int Depth { get; } = 2;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Describe() => Depth;
    }
}
