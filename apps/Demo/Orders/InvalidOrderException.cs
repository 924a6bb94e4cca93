namespace Demo.Orders;

/// <summary>Thrown by <see cref="OrderValidator"/> for an order the pipeline rejects.</summary>
public sealed class InvalidOrderException(long orderId, string reason)
    : Exception($"order {orderId}: {reason}")
{
    public long OrderId { get; } = orderId;
}
