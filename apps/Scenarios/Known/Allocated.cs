namespace Scenarios.Known;

/// <summary>The class the `alloc` scenario allocates n times.</summary>
public sealed class Allocated
{
    public Allocated(int id)
    {
        Id = id;
        Square = (long)id * id;
    }

    public int Id { get; }

    public long Square { get; }
}
