using Shop;
using Xunit;

namespace Shop.Tests;

public class CartTests
{
    [Fact]
    public void AddsAndTotals()
    {
        var cart = new Cart();
        cart.Add("apple", 2, 1.5m);
        cart.Add("pear", 1, 2m);
        Assert.Equal(2, cart.Count);
        Assert.Equal(5m, cart.Total());
    }

    [Fact]
    public void RefusesAnEmptySku()
    {
        var cart = new Cart();
        Assert.Throws<ArgumentException>(() => cart.Add("", 1, 1m));
    }

    [Theory]
    [InlineData("TEN", 9)]
    [InlineData(null, 10)]
    public void Discounts(string? code, int expected)
    {
        var cart = new Cart();
        cart.Add("a", 1, 10m);
        Assert.Equal(expected, cart.TotalWithDiscount(code));
    }

    [Fact]
    public void ListsSkus()
    {
        var cart = new Cart();
        cart.Add("a", 3, 1m);
        cart.Add("b", 1, 1m);
        Assert.Equal(new[] { "ax3", "b" }, cart.Skus().ToArray());
        Assert.Equal(1, cart.CountWhere(q => q > 1));
    }

    [Fact]
    public async Task TotalsAsync()
    {
        var cart = new Cart();
        cart.Add("a", 1, 4m);
        Assert.Equal(4m, await cart.TotalAsync(false));
    }

    [Fact]
    public void SumsASequence()
    {
        Assert.Equal(6, Cart.SumAll(Enumerable.Range(1, 3)));
    }

    [Fact]
    public void ParsesOrNot()
    {
        Assert.Equal("12", Cart.Parse("12"));
        Assert.Equal("bad", Cart.Parse("x"));
    }
}
