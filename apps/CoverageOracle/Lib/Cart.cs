namespace Shop;

public sealed class Cart
{
    private readonly List<(string Sku, int Qty, decimal Price)> _items = new();

    public int Count => _items.Count;

    public void Add(string sku, int qty, decimal price)
    {
        if (string.IsNullOrEmpty(sku))
        {
            throw new ArgumentException("empty sku", nameof(sku));
        }
        if (qty <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(qty));
        }
        _items.Add((sku, qty, price));
    }

    public decimal Total()
    {
        decimal total = 0;
        foreach (var (_, qty, price) in _items)
        {
            total += qty * price;
        }
        return total;
    }

    public decimal TotalWithDiscount(string? code)
    {
        var total = Total();
        switch (code)
        {
            case "TEN":
                return total * 0.9m;
            case "HALF":
                return total / 2;
            case null:
                return total;
            default:
                return total;
        }
    }

    public IEnumerable<string> Skus()
    {
        foreach (var item in _items)
        {
            if (item.Qty > 1)
            {
                yield return item.Sku + "x" + item.Qty;
            }
            else
            {
                yield return item.Sku;
            }
        }
    }

    public int CountWhere(Func<int, bool> predicate) => _items.Count(i => predicate(i.Qty));

    public async Task<decimal> TotalAsync(bool slow)
    {
        if (slow)
        {
            await Task.Delay(1);
        }
        await Task.Yield();
        return Total();
    }

    public static string Parse(string text)
    {
        try
        {
            return int.Parse(text).ToString();
        }
        catch (FormatException)
        {
            return "bad";
        }
        finally
        {
            Audit.Count++;
        }
    }

    public static int SumAll(IEnumerable<int> values)
    {
        int sum = 0;
        foreach (var v in values)
        {
            sum += v;
        }
        return sum;
    }

    public static int Unused(int x)
    {
        return x > 0 ? x : -x;
    }
}

public static class Audit
{
    public static int Count;
}
