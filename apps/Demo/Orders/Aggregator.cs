using System.Runtime.InteropServices;

namespace Demo.Orders;

/// <summary>Running totals per product, customer and region/day: the Dictionary-heavy stage.</summary>
public sealed class Aggregator
{
    public Dictionary<string, int> UnitsBySku { get; } = new(StringComparer.Ordinal);

    public Dictionary<string, decimal> RevenueByCustomer { get; } = new(StringComparer.Ordinal);

    public Dictionary<(string Region, int Day), decimal> RevenueByRegionDay { get; } = [];

    public List<(Order Order, decimal Total)> Accepted { get; } = [];

    public void Add(Order order)
    {
        decimal total = Pricing.Total(order);
        foreach (var line in order.Lines)
        {
            CollectionsMarshal.GetValueRefOrAddDefault(UnitsBySku, line.Sku, out _) += line.Quantity;
        }
        CollectionsMarshal.GetValueRefOrAddDefault(RevenueByCustomer, order.CustomerId, out _) += total;
        CollectionsMarshal.GetValueRefOrAddDefault(RevenueByRegionDay, (order.Region, order.Day), out _) += total;
        Accepted.Add((order, total));
    }
}
