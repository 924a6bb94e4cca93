namespace Demo.Orders;

/// <summary>The pipeline's result, built with LINQ from the aggregator's totals.</summary>
public sealed record Summary(
    long Generated,
    long Accepted,
    long Rejected,
    decimal Revenue,
    List<string> TopProducts,
    string TopCustomer,
    decimal TopCustomerRevenue,
    string BestRegion,
    int BestDay,
    long JsonBytes)
{
    public static Summary From(Aggregator agg, long generated, long rejected, long jsonBytes)
    {
        var topProducts = agg.UnitsBySku
            .OrderByDescending(kv => kv.Value)
            .ThenBy(kv => kv.Key, StringComparer.Ordinal)
            .Take(3)
            .Select(kv => $"{kv.Key}:{kv.Value}")
            .ToList();
        var topCustomer = agg.RevenueByCustomer
            .OrderByDescending(kv => kv.Value)
            .ThenBy(kv => kv.Key, StringComparer.Ordinal)
            .First();
        var bestRegion = agg.RevenueByRegionDay
            .GroupBy(kv => kv.Key.Region)
            .Select(g => (Region: g.Key, Revenue: g.Sum(kv => kv.Value)))
            .OrderByDescending(r => r.Revenue)
            .ThenBy(r => r.Region, StringComparer.Ordinal)
            .First();
        var bestDay = agg.Accepted
            .GroupBy(a => a.Order.Day)
            .Select(g => (Day: g.Key, Revenue: g.Sum(a => a.Total)))
            .OrderByDescending(d => d.Revenue)
            .ThenBy(d => d.Day)
            .First();
        return new Summary(
            generated,
            agg.Accepted.Count,
            rejected,
            agg.Accepted.Sum(a => a.Total),
            topProducts,
            topCustomer.Key,
            topCustomer.Value,
            bestRegion.Region,
            bestDay.Day,
            jsonBytes);
    }
}
