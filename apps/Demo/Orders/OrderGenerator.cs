namespace Demo.Orders;

/// <summary>Makes the same orders on every run (its own xorshift generator, fixed seed).</summary>
public sealed class OrderGenerator
{
    private static readonly string[] Regions = ["north", "south", "east", "west", "central"];
    private static readonly string[] Coupons = ["SPRING10", "VIP25", "WELCOME5"];

    private ulong _state = 0x9E3779B97F4A7C15UL;

    /// <summary>Every this-many orders one is made invalid on purpose.</summary>
    public const int InvalidEvery = 4_999;

    public Order Next(long id)
    {
        int lineCount = 1 + Below(5);
        var lines = new List<OrderLine>(lineCount);
        for (int i = 0; i < lineCount; i++)
        {
            int product = Below(400);
            decimal price = 1.99m + (product % 97 * 0.75m);
            lines.Add(new OrderLine($"SKU-{product:D4}", 1 + Below(9), price));
        }
        if (id % InvalidEvery == InvalidEvery - 1)
        {
            // A broken order: the parser stage rejects it.
            lines[0] = lines[0] with { Quantity = -lines[0].Quantity };
        }
        string? coupon = Below(10) == 0 ? Coupons[Below(Coupons.Length)] : null;
        return new Order(id, $"C-{Below(2_000):D5}", Regions[Below(Regions.Length)], 1 + Below(28), lines, coupon);
    }

    private int Below(int bound)
    {
        _state ^= _state << 13;
        _state ^= _state >> 7;
        _state ^= _state << 17;
        return (int)(_state % (ulong)bound);
    }
}
