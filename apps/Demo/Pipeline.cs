using System.Collections.Concurrent;
using System.Text.Json;
using Demo.Orders;

namespace Demo;

/// <summary>
/// Three named threads joined by bounded queues: order-generator makes orders and writes
/// them as JSON, order-parser reads the JSON back and rejects invalid orders (caught
/// InvalidOrderException), order-aggregator prices and totals the accepted ones.
/// </summary>
public sealed class Pipeline(int orderCount)
{
    private readonly BlockingCollection<string> _json = new(boundedCapacity: 1_024);
    private readonly BlockingCollection<Order> _parsed = new(boundedCapacity: 1_024);
    private readonly Aggregator _aggregator = new();
    private long _jsonBytes;
    private long _rejected;

    public Summary Run()
    {
        Thread[] stages =
        [
            new(Generate) { Name = "order-generator" },
            new(Parse) { Name = "order-parser" },
            new(Aggregate) { Name = "order-aggregator" },
        ];
        foreach (var stage in stages)
        {
            stage.Start();
        }
        foreach (var stage in stages)
        {
            stage.Join();
        }
        return Summary.From(_aggregator, orderCount, _rejected, _jsonBytes);
    }

    private void Generate()
    {
        var generator = new OrderGenerator();
        for (long id = 0; id < orderCount; id++)
        {
            string json = JsonSerializer.Serialize(generator.Next(id), OrderJson.Default.Order);
            _jsonBytes += json.Length;
            _json.Add(json);
        }
        _json.CompleteAdding();
    }

    private void Parse()
    {
        foreach (string json in _json.GetConsumingEnumerable())
        {
            var order = JsonSerializer.Deserialize(json, OrderJson.Default.Order)!;
            try
            {
                OrderValidator.Validate(order);
                _parsed.Add(order);
            }
            catch (InvalidOrderException)
            {
                _rejected++;
            }
        }
        _parsed.CompleteAdding();
    }

    private void Aggregate()
    {
        foreach (var order in _parsed.GetConsumingEnumerable())
        {
            _aggregator.Add(order);
        }
    }
}
