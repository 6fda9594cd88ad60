// 8-bit up/down counter with synchronous load and enable, asynchronous active-low reset.
`timescale 1ns/1ps
module counter #(
  parameter int WIDTH = 8
) (
  input  logic             clk,
  input  logic             rst_n,
  input  logic             en,
  input  logic             load,
  input  logic             up,
  input  logic [WIDTH-1:0] din,
  output logic [WIDTH-1:0] count,
  output logic             wrap
);
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      count <= '0;
      wrap  <= 1'b0;
    end else if (load) begin
      count <= din;
      wrap  <= 1'b0;
    end else if (en) begin
      if (up) begin
        count <= count + 1'b1;
        wrap  <= (count == {WIDTH{1'b1}});
      end else begin
        count <= count - 1'b1;
        wrap  <= (count == '0);
      end
    end else begin
      wrap <= 1'b0;
    end
  end
endmodule
