// A processing element: multiply-accumulate with saturation, a small mode FSM, a history shift
// register and a CRC of its outputs. Sixteen of them make a DUT whose C++ takes seconds to compile.
module pe #(parameter int ID = 0) (
  input  logic        clk,
  input  logic        rst_n,
  input  logic [15:0] a_in,
  input  logic [15:0] b_in,
  input  logic [1:0]  mode,
  output logic [15:0] a_out,
  output logic [15:0] b_out,
  output logic [31:0] acc,
  output logic [15:0] crc
);
  typedef enum logic [2:0] {IDLE, MAC, SAT, DRAIN, HOLD} state_t;
  state_t state;
  logic [15:0] hist [8];
  logic [31:0] prod;
  assign prod = a_in * b_in;
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      state <= IDLE; acc <= '0; a_out <= '0; b_out <= '0; crc <= 16'hFFFF;
      for (int i = 0; i < 8; i++) hist[i] <= '0;
    end else begin
      a_out <= a_in; b_out <= b_in;
      for (int i = 7; i > 0; i--) hist[i] <= hist[i-1];
      hist[0] <= a_in ^ b_in ^ 16'(ID);
      crc <= {crc[14:0], 1'b0} ^ ((crc[15] ^ a_in[0]) ? 16'h1021 : 16'h0);
      case (state)
        IDLE:  if (mode == 2'd1) state <= MAC; else if (mode == 2'd2) state <= DRAIN;
        MAC: begin
          if (acc + prod < acc) begin acc <= 32'hFFFF_FFFF; state <= SAT; end
          else acc <= acc + prod;
          if (mode == 2'd0) state <= IDLE;
        end
        SAT:   if (mode == 2'd3) begin acc <= '0; state <= IDLE; end
        DRAIN: begin acc <= acc >> 1; if (acc == 0) state <= HOLD; end
        HOLD:  if (hist[7] == hist[0]) state <= IDLE; else if (mode == 2'd1) state <= MAC;
        default: state <= IDLE;
      endcase
    end
  end
endmodule
