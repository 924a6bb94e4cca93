namespace Scenarios.Known;

/// <summary>The exception the `deep-exceptions` scenario throws ten frames deep.</summary>
public sealed class DeepException : Exception
{
    public DeepException(int round)
        : base($"deep #{round}")
    {
        Round = round;
    }

    public int Round { get; }
}
