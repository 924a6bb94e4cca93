using System.Text.Json.Serialization;

namespace Demo.Orders;

/// <summary>System.Text.Json source-generated serializers for the pipeline's types.</summary>
[JsonSourceGenerationOptions(PropertyNamingPolicy = JsonKnownNamingPolicy.CamelCase)]
[JsonSerializable(typeof(Order))]
[JsonSerializable(typeof(Summary))]
internal sealed partial class OrderJson : JsonSerializerContext
{
}
