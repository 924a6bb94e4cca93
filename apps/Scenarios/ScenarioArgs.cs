using System.Globalization;

namespace Scenarios;

/// <summary>
/// A scenario's arguments: each scenario takes at most one number, given either
/// positionally (<c>fib 25</c>) or by name (<c>fib n=25</c>).
/// </summary>
public sealed class ScenarioArgs
{
    private readonly Dictionary<string, string> _named;
    private readonly List<string> _positional;

    private ScenarioArgs(Dictionary<string, string> named, List<string> positional)
    {
        _named = named;
        _positional = positional;
    }

    /// <summary>Splits the arguments; null when one is malformed (e.g. <c>=5</c>).</summary>
    public static ScenarioArgs? Parse(ReadOnlySpan<string> args)
    {
        var named = new Dictionary<string, string>(StringComparer.Ordinal);
        var positional = new List<string>();
        foreach (var arg in args)
        {
            int eq = arg.IndexOf('=', StringComparison.Ordinal);
            if (eq == 0)
            {
                return null;
            }
            if (eq > 0)
            {
                named[arg[..eq]] = arg[(eq + 1)..];
            }
            else
            {
                positional.Add(arg);
            }
        }
        return new ScenarioArgs(named, positional);
    }

    /// <summary>
    /// The value named <paramref name="name"/>, else the first positional argument, else
    /// <paramref name="defaultValue"/>. A value that is not a non-negative whole number
    /// ends the process with exit code 2 (no exception is thrown).
    /// </summary>
    public int Int(string name, int defaultValue) =>
        Parse(name, _named.TryGetValue(name, out var v) ? v : _positional.Count > 0 ? _positional[0] : null, defaultValue);

    /// <summary>
    /// The value named <paramref name="name"/> (never a positional argument), else
    /// <paramref name="defaultValue"/>; checked as <see cref="Int"/> does.
    /// </summary>
    public int NamedInt(string name, int defaultValue) =>
        Parse(name, _named.TryGetValue(name, out var v) ? v : null, defaultValue);

    private static int Parse(string name, string? text, int defaultValue)
    {
        if (text is null)
        {
            return defaultValue;
        }
        if (!int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out int value))
        {
            Console.Error.WriteLine($"Scenarios: {name} must be a non-negative whole number, got '{text}'");
            Environment.Exit(2);
        }
        return value;
    }
}
