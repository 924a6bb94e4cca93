using System.Runtime.CompilerServices;

namespace Scenarios;

// Dispatch targets of the `calls` scenario; each counts its own calls.

/// <summary>The user struct passed to <see cref="Calls.Echo{T}"/>.</summary>
public readonly record struct Point(int X, int Y);

/// <summary>Virtual dispatch target of the `calls` scenario.</summary>
public abstract class Shape
{
    public abstract double Area();
}

public sealed class Circle(double radius) : Shape
{
    public static int Calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public override double Area()
    {
        Calls++;
        return Math.PI * radius * radius;
    }
}

public sealed class Square(double side) : Shape
{
    public static int Calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public override double Area()
    {
        Calls++;
        return side * side;
    }
}

/// <summary>Interface dispatch target of the `calls` scenario.</summary>
public interface IGreeter
{
    string Greet(string name);
}

public sealed class EnglishGreeter : IGreeter
{
    public static int Calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public string Greet(string name)
    {
        Calls++;
        return $"Hello, {name}";
    }
}

public sealed class FrenchGreeter : IGreeter
{
    public static int Calls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public string Greet(string name)
    {
        Calls++;
        return $"Bonjour, {name}";
    }
}
