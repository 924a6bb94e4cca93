using System.Globalization;
using System.Text.Json;
using Demo;
using Demo.Orders;

// The clrprof demo: `clrprof record -- dotnet Demo.dll` profiles about two seconds of an
// order pipeline (JSON, LINQ, dictionaries, a few exceptions, three worker threads, GCs).
// Output is the same on every run.
int orders = args.Length > 0 && int.TryParse(args[0], NumberStyles.None, CultureInfo.InvariantCulture, out int n) ? n : 150_000;

Console.WriteLine($"clrprof demo: order pipeline, {orders:N0} orders");
Summary summary = new Pipeline(orders).Run();
var inv = CultureInfo.InvariantCulture;
Console.WriteLine(string.Create(inv, $"  accepted       {summary.Accepted,14:N0}"));
Console.WriteLine(string.Create(inv, $"  rejected       {summary.Rejected,14:N0}  (InvalidOrderException)"));
Console.WriteLine(string.Create(inv, $"  revenue        {summary.Revenue,14:N2}"));
Console.WriteLine(string.Create(inv, $"  top products   {string.Join(", ", summary.TopProducts)}"));
Console.WriteLine(string.Create(inv, $"  top customer   {summary.TopCustomer} ({summary.TopCustomerRevenue:N2})"));
Console.WriteLine(string.Create(inv, $"  best region    {summary.BestRegion}, best day {summary.BestDay}"));
Console.WriteLine(string.Create(inv, $"  JSON written   {summary.JsonBytes / 1024.0 / 1024.0,14:N1} MiB"));
string json = JsonSerializer.Serialize(summary, OrderJson.Default.Summary);
Console.WriteLine(string.Create(
    inv,
    $"RESULT orders={summary.Generated} accepted={summary.Accepted} rejected={summary.Rejected} revenue={summary.Revenue} summary_json_bytes={json.Length}"));
