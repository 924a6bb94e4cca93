using System.Globalization;
using System.Text;

namespace Scenarios;

/// <summary>
/// Prints the facts a scenario computed about itself as <c>RESULT key=value ...</c> lines.
/// Values never contain whitespace; numbers use the invariant culture.
/// </summary>
public static class Results
{
    public static void Print(params ReadOnlySpan<(string Key, object Value)> pairs)
    {
        var line = new StringBuilder("RESULT");
        foreach (var (key, value) in pairs)
        {
            string text = value switch
            {
                double d => d.ToString("R", CultureInfo.InvariantCulture),
                float f => f.ToString("R", CultureInfo.InvariantCulture),
                bool b => b ? "1" : "0",
                _ => Convert.ToString(value, CultureInfo.InvariantCulture) ?? "",
            };
            if (text.Length == 0 || text.Any(char.IsWhiteSpace))
            {
                throw new ArgumentException($"RESULT value for {key} is empty or has whitespace: '{text}'");
            }
            line.Append(' ').Append(key).Append('=').Append(text);
        }
        Console.Out.WriteLine(line.ToString());
        Console.Out.Flush();
    }

    /// <summary>A share (0..1) with three decimals, e.g. <c>0.750</c>.</summary>
    public static string Share(double share) => share.ToString("F3", CultureInfo.InvariantCulture);
}
