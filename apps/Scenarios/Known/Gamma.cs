using System.Runtime.CompilerServices;

namespace Scenarios.Known;

/// <summary>A generic class; the `classes` scenario instantiates <c>Gamma&lt;int&gt;</c>.</summary>
public sealed class Gamma<T>
{
    public Gamma(T item) => Item = item;

    public T Item { get; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public string Describe() => $"{Item}";
}
