namespace Demo.Orders;

/// <summary>Checks an order; throws <see cref="InvalidOrderException"/> when it is broken.</summary>
public static class OrderValidator
{
    public static void Validate(Order order)
    {
        if (order.Lines.Count == 0)
        {
            throw new InvalidOrderException(order.Id, "no lines");
        }
        foreach (var line in order.Lines)
        {
            if (line.Quantity <= 0)
            {
                throw new InvalidOrderException(order.Id, $"quantity {line.Quantity} of {line.Sku}");
            }
        }
    }
}
