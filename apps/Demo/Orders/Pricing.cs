namespace Demo.Orders;

/// <summary>What an order costs after volume and coupon discounts.</summary>
public static class Pricing
{
    public static decimal Total(Order order)
    {
        decimal total = 0;
        foreach (var line in order.Lines)
        {
            decimal gross = line.UnitPrice * line.Quantity;
            decimal volume = line.Quantity >= 8 ? 0.10m : line.Quantity >= 5 ? 0.05m : 0m;
            total += decimal.Round(gross * (1 - volume), 2);
        }
        decimal coupon = order.Coupon switch
        {
            "SPRING10" => 0.10m,
            "VIP25" => 0.25m,
            "WELCOME5" => 0.05m,
            _ => 0m,
        };
        return decimal.Round(total * (1 - coupon), 2);
    }
}
