using System.Text;

namespace Scenarios.Known;

/// <summary>
/// Type names in the form a profiler report uses: namespace-qualified, <c>+</c> for nesting,
/// generic arguments in angle brackets (<c>Scenarios.Known.Gamma&lt;System.Int32&gt;</c>).
/// </summary>
public static class TypeNames
{
    public static string Display(Type type)
    {
        var name = new StringBuilder();
        if (type.DeclaringType is { } outer && !type.IsGenericParameter)
        {
            name.Append(Display(outer)).Append('+');
        }
        else if (!string.IsNullOrEmpty(type.Namespace))
        {
            name.Append(type.Namespace).Append('.');
        }
        string simple = type.Name;
        int tick = simple.IndexOf('`', StringComparison.Ordinal);
        name.Append(tick >= 0 ? simple[..tick] : simple);
        if (type.IsConstructedGenericType)
        {
            name.Append('<').AppendJoin(',', type.GetGenericArguments().Select(Display)).Append('>');
        }
        return name.ToString();
    }
}
