namespace Demo.Orders;

/// <summary>One line of an order: a product and how many of it.</summary>
public sealed record OrderLine(string Sku, int Quantity, decimal UnitPrice);

/// <summary>An order as it travels through the pipeline (and as JSON).</summary>
public sealed record Order(long Id, string CustomerId, string Region, int Day, List<OrderLine> Lines, string? Coupon);
