using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `args-text`: <c>Scenarios.ArgsText.Measure(string, int)</c> called once with each of
/// eight strings, the ones the `--args` trampolines write themselves and the ones they
/// leave to the Rust hooks: empty, short ASCII, 96 and 97 characters, a character past
/// ASCII among the first four and in the tail, an astral character, null. Prints each
/// call's result: the string's length times 10 plus the call's number (-10 + k for null).
/// </summary>
public static class ArgsText
{
    public static readonly string?[] Texts =
    [
        "",
        "abc",
        new string('x', 96),
        new string('y', 97),
        "h\u00e9llo",
        "abcdefgh\u00e9",
        "ab\U0001F600cd",
        null,
    ];

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        var pairs = new (string, object)[Texts.Length];
        for (int k = 0; k < Texts.Length; k++)
        {
            pairs[k] = ($"text_{k}", Measure(Texts[k], k));
        }
        Results.Print(pairs);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Measure(string? s, int k) => ((s?.Length ?? -1) * 10) + k;
}
